package main

import (
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// The inbound QoS 2 state machine: forwarded once, a resend answered
// with the first one's outcome, released by PUBREL, bounded.
func TestQos2ExactlyOnce(t *testing.T) {
	q := newQos2In(2)
	e, fresh, err := q.begin(7)
	if err != nil || !fresh {
		t.Fatalf("first PUBLISH: fresh %v err %v", fresh, err)
	}
	d, fresh, err := q.begin(7) // DUP before the router's outcome
	if err != nil || fresh || d != e {
		t.Fatalf("resend while pending: fresh %v err %v same %v", fresh, err, d == e)
	}
	select {
	case <-d.done:
		t.Fatal("outcome known before settle")
	default:
	}
	q.settle(7, e, true, 0)
	<-d.done
	if !d.accepted {
		t.Fatal("the resend must see the first one's acceptance")
	}
	if _, fresh, _ := q.begin(7); fresh {
		t.Fatal("a resend after PUBREC must not be forwarded again")
	}
	if !q.release(7) || q.release(7) {
		t.Fatal("PUBREL releases the id once")
	}
	if _, fresh, _ := q.begin(7); !fresh {
		t.Fatal("after PUBREL the id is new")
	}
}

func TestQos2RefusedIsForgotten(t *testing.T) {
	q := newQos2In(4)
	e, _, _ := q.begin(1)
	q.settle(1, e, false, 0x87)
	q.settle(1, e, true, 0) // a second settle changes nothing
	if e.accepted || e.code != 0x87 || q.len() != 0 {
		t.Fatalf("refused: accepted %v code %x len %d", e.accepted, e.code, q.len())
	}
	if _, fresh, _ := q.begin(1); !fresh {
		t.Fatal("a resend of a refused publish is a new attempt")
	}
}

func TestQos2WindowBounded(t *testing.T) {
	q := newQos2In(2)
	for id := uint16(1); id <= 2; id++ {
		e, _, err := q.begin(id)
		if err != nil {
			t.Fatal(err)
		}
		q.settle(id, e, true, 0)
	}
	if _, _, err := q.begin(3); err != errReceiveMaximum {
		t.Fatalf("third id over a window of 2: %v", err)
	}
	if _, fresh, err := q.begin(2); err != nil || fresh {
		t.Fatalf("a resend of a remembered id is not counted again: %v %v", fresh, err)
	}
	q.release(1)
	if _, fresh, err := q.begin(3); err != nil || !fresh {
		t.Fatalf("after a PUBREL there is room: %v %v", fresh, err)
	}
}

func TestQos2ResendWaitsForTheOutcome(t *testing.T) {
	q := newQos2In(1)
	e, _, _ := q.begin(9)
	d, _, _ := q.begin(9)
	go func() { time.Sleep(20 * time.Millisecond); q.settle(9, e, true, 0) }()
	select {
	case <-d.done:
	case <-time.After(2 * time.Second):
		t.Fatal("the resend never learnt the outcome")
	}
}

// expires is mochi's rule for a session that ends with its connection; the
// gateway keeps a session's link exactly when it is false.
func TestSessionPersistsByMochisRule(t *testing.T) {
	cases := []struct {
		version byte
		clean   bool
		expiry  uint32
		ends    bool
	}{
		{4, true, 0, true}, {4, false, 0, false}, // 3.1.1: clean session
		{5, true, 0, true}, {5, false, 0, true}, // MQTT 5: the expiry, not clean start
		{5, true, 60, false}, {5, false, 60, false},
	}
	for _, c := range cases {
		cl := &mqtt.Client{}
		cl.Properties.ProtocolVersion, cl.Properties.Clean = c.version, c.clean
		cl.Properties.Props.SessionExpiryInterval = c.expiry
		if got := expires(cl); got != c.ends {
			t.Errorf("v%d clean %v expiry %d: ends with the connection %v, want %v", c.version, c.clean, c.expiry, got, c.ends)
		}
	}
}

// The ids a record carries: accepted and not released only; restored, a
// resend of one is answered as accepted and not forwarded, its PUBREL
// releases it, and ids the record does not name are new.
func TestQos2IdsOfTheRecord(t *testing.T) {
	q := newQos2In(4)
	for _, id := range []uint16{9, 3, 5} {
		e, _, _ := q.begin(id)
		q.settle(id, e, id != 5, 0x80) // 5 refused: forgotten
	}
	q.begin(11) // pending: no outcome yet
	if got := q.accepted(); len(got) != 2 || got[0] != 3 || got[1] != 9 {
		t.Fatalf("accepted %v, want [3 9]", got)
	}
	r := newQos2In(4)
	r.restore(q.accepted())
	e, fresh, err := r.begin(9)
	if err != nil || fresh {
		t.Fatalf("a resend of a restored id: fresh %v err %v", fresh, err)
	}
	<-e.done
	if !e.accepted {
		t.Fatal("a restored id is accepted")
	}
	if _, fresh, _ := r.begin(4); !fresh {
		t.Fatal("an id the record does not name is new")
	}
	if !r.release(3) || len(r.accepted()) != 1 {
		t.Fatalf("PUBREL of a restored id: %v", r.accepted())
	}
}
