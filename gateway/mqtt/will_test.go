package main

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

func TestWillDue(t *testing.T) {
	cases := []struct {
		name       string
		err, cause error
		due        bool
	}{
		{"normal DISCONNECT", nil, packets.CodeDisconnect, false},
		{"DISCONNECT 0x04", packets.CodeDisconnectWillMessage, packets.CodeDisconnectWillMessage, true},
		{"dropped TCP", errors.New("EOF"), errors.New("EOF"), true},
		{"keep-alive timeout", errors.New("i/o timeout"), errors.New("i/o timeout"), true},
		{"takeover", errors.New("use of closed network connection"), packets.ErrSessionTakenOver, true},
		{"takeover between two reads", nil, packets.ErrSessionTakenOver, true},
		{"closed by the gateway", nil, errors.New("publish not accepted by the router"), true},
		{"protocol error", packets.ErrProtocolViolationSecondConnect, packets.ErrProtocolViolationSecondConnect, true},
	}
	for _, c := range cases {
		if got := willDue(c.err, c.cause); got != c.due {
			t.Errorf("%s: willDue = %v, want %v", c.name, got, c.due)
		}
	}
	if !takenOver(packets.ErrSessionTakenOver) || takenOver(packets.CodeDisconnect) || takenOver(nil) {
		t.Error("takenOver")
	}
}

func TestNotAuthorized(t *testing.T) {
	unauth := &amqp.LinkError{RemoteErr: &amqp.Error{Condition: amqp.ErrCondUnauthorizedAccess}}
	other := &amqp.LinkError{RemoteErr: &amqp.Error{Condition: amqp.ErrCondInternalError}}
	if !notAuthorized(errNotAddress) || !notAuthorized(fmt.Errorf("x: %w", unauth)) ||
		!notAuthorized(&amqp.Error{Condition: amqp.ErrCondUnauthorizedAccess}) {
		t.Error("a refusal of the client is not authorized")
	}
	if notAuthorized(other) || notAuthorized(&amqp.ConnError{}) || notAuthorized(errors.New("timeout")) {
		t.Error("a router failure is not a refusal")
	}
}

func TestNewMessageIsThePublishMapping(t *testing.T) {
	m := newMessage("q1", []byte("gone"), 1, true)
	if !m.Header.Durable || *m.Properties.To != "q1" || string(m.GetData()) != "gone" {
		t.Fatalf("message %+v", m)
	}
	if m.Annotations[annotationQos] != int32(1) || m.Annotations[annotationRetain] != true {
		t.Fatalf("annotations %v", m.Annotations)
	}
	m = newMessage("q1", nil, 0, false)
	if m.Header.Durable || m.Annotations[annotationQos] != int32(0) {
		t.Fatalf("QoS 0 %+v", m)
	}
	if _, ok := m.Annotations[annotationRetain]; ok {
		t.Fatal("retain annotation without retain")
	}
}

func newWill(client, user string) *will {
	w := &will{client: client, user: user, stop: make(chan struct{})}
	w.state.Store(willScheduled)
	return w
}

func TestDelayedWillsCancelOnlyTheSameUsersOnce(t *testing.T) {
	var d delayedWills
	a, other, b := newWill("dev1", "alice"), newWill("dev1", "bob"), newWill("dev2", "alice")
	d.add(a)
	d.add(other)
	d.add(b)
	if n := d.cancel("dev1", "alice"); n != 1 {
		t.Fatalf("cancelled %d, want 1", n)
	}
	select {
	case <-a.stop:
	default:
		t.Fatal("alice's dev1 will not stopped")
	}
	if a.state.Load() != willDone || other.state.Load() != willScheduled || b.state.Load() != willScheduled {
		t.Fatal("another user's or another client id's will was cancelled")
	}
	if n := d.cancel("dev1", "alice"); n != 0 { // closing stop twice would panic
		t.Fatalf("cancelled again: %d", n)
	}
	if len(d.m["dev1"]) != 1 || len(d.m["dev2"]) != 1 {
		t.Fatalf("left %v", d.m)
	}
}

func TestAWillBeingSentCannotBeCancelledNorSentAgain(t *testing.T) {
	var d delayedWills
	w := newWill("dev1", "alice")
	d.add(w)
	if !w.state.CompareAndSwap(willScheduled, willSending) { // what fireWill does first
		t.Fatal("CAS")
	}
	if n := d.cancel("dev1", "alice"); n != 0 {
		t.Fatal("a will being sent was cancelled")
	}
	w.state.Store(willDone)
	b := &Bridge{}
	b.fireWill(nil, nil, w, willScheduled) // returns at once: nil link and client are not touched
	b.fireWill(nil, nil, w, willRegistered)
	if w.state.Load() != willDone {
		t.Fatal("state changed")
	}
}

// The old connection of a takeover reaches OnDisconnect on either side of
// the new one's register; either way its delayed will must not stay scheduled.
func TestATakeoverCancelsTheDelayedWillInEitherOrder(t *testing.T) {
	for _, newFirst := range []bool{true, false} {
		b := &Bridge{links: map[*mqtt.Client]*link{}, conns: map[*mqtt.Client]*connState{}}
		old, cur := &mqtt.Client{ID: "dev1"}, &mqtt.Client{ID: "dev1"}
		w := &will{client: "dev1", user: "alice", stop: make(chan struct{})}
		scheduled, cancelled := true, 0
		if newFirst {
			cancelled = b.register(cur, &link{user: "alice"}, nil)
			scheduled = b.scheduleWill(old, "alice", w)
		} else {
			scheduled = b.scheduleWill(old, "alice", w)
			cancelled = b.register(cur, &link{user: "alice"}, nil)
		}
		if newFirst && (scheduled || cancelled != 0 || len(b.delayed.m["dev1"]) != 0) {
			t.Fatalf("new first: scheduled %v, cancelled %d", scheduled, cancelled)
		}
		if !newFirst && (!scheduled || cancelled != 1 || w.state.Load() != willDone || len(b.delayed.m["dev1"]) != 0) {
			t.Fatalf("old first: scheduled %v, cancelled %d, state %d", scheduled, cancelled, w.state.Load())
		}
	}
	// another user's connection with the id neither prevents nor cancels it
	b := &Bridge{links: map[*mqtt.Client]*link{}, conns: map[*mqtt.Client]*connState{}}
	w := &will{client: "dev1", user: "alice", stop: make(chan struct{})}
	b.register(&mqtt.Client{ID: "dev1"}, &link{user: "bob"}, nil)
	if !b.scheduleWill(&mqtt.Client{ID: "dev1"}, "alice", w) || b.register(&mqtt.Client{ID: "dev1"}, &link{user: "bob"}, nil) != 0 {
		t.Fatal("bob's connection cancelled alice's will")
	}
}

func TestWillMessageCarriesTheDelay(t *testing.T) {
	w := &will{address: "q1", delay: 30 * time.Second,
		pk: packets.Packet{FixedHeader: packets.FixedHeader{Qos: 1, Retain: true}, Payload: []byte("gone")}}
	m := willMessage(w)
	if m.Annotations[annotationWillDelay] != int64(30) || m.Annotations[annotationRetain] != true || !m.Header.Durable {
		t.Fatalf("annotations %v", m.Annotations)
	}
	w.delay = 0
	if _, ok := willMessage(w).Annotations[annotationWillDelay]; ok {
		t.Fatal("a will without delay carries a delay")
	}
}

func TestShortDisconnectReasonIsTheTailOfTheStream(t *testing.T) {
	for _, c := range []struct {
		name  string
		reads [][]byte
		code  byte
		found bool
	}{
		{"0x04 alone", [][]byte{{0xE0, 0x01, 0x04}}, 0x04, true},
		{"after a PINGREQ in one read", [][]byte{{0xC0, 0x00, 0xE0, 0x01, 0x04}}, 0x04, true},
		{"split over reads", [][]byte{{0xC0, 0x00, 0xE0}, {0x01}, {0x04}}, 0x04, true},
		{"a PINGREQ last", [][]byte{{0xE0, 0x01, 0x04, 0xC0, 0x00}}, 0, false},
		{"two bytes only", [][]byte{{0x01, 0x04}}, 0, false},
	} {
		server, client := net.Pipe()
		tc := &tailConn{Conn: server}
		go func() {
			for _, r := range c.reads {
				_, _ = client.Write(r)
			}
			_ = client.Close()
		}()
		buf := make([]byte, 16)
		for {
			if _, err := tc.Read(buf); err != nil {
				break
			}
		}
		code, found := shortDisconnectReason(tc)
		if code != c.code || found != c.found {
			t.Errorf("%s: %#x %v, want %#x %v", c.name, code, found, c.code, c.found)
		}
	}
	if _, found := shortDisconnectReason(&net.TCPConn{}); found {
		t.Error("a connection that is no tailConn")
	}
}
