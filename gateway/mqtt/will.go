package main

// Last will (docs/mqtt-design.md "Last will"). The gateway keeps the will
// itself; mochi never sees it (OnConnect clears cl.Properties.Will), so
// mochi's local fan-out of wills is never used.
//
//   - CONNECT: the will's topic must pass the check of a PUBLISH
//     (sendable: an address of the table and a sender the router lets
//     attach with the client's own identity); else CONNACK 0x87 / 3.1.1 5.
//   - The client goes away without a normal DISCONNECT (dropped TCP,
//     keep-alive timeout, protocol error, takeover, DISCONNECT 0x04): the
//     will is sent on the client's own AMQP connection, kept open for it
//     (redialled with the client's credentials if the router dropped it).
//   - MQTT 5 Will Delay Interval: the will waits; a new connection with the
//     same client id and user cancels it.
//   - A will is sent at most once (state, compare-and-swap).

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	willRegistered int32 = iota // the client is connected
	willScheduled               // waiting for its delay
	willSending                 // being sent: nobody else may send or cancel it
	willDone                    // sent, failed or cancelled
)

// willAttempts: a QoS 1 will the router released (no consumer yet, a link
// route's peer gone) or that failed on a broken connection is tried again.
const willAttempts = 3

// will is the last will one connection registered at CONNECT.
type will struct {
	client  string
	user    string
	pk      packets.Packet // topic, payload, QoS, retain as a PUBLISH
	address string
	delay   time.Duration
	state   atomic.Int32
	stop    chan struct{} // closed when a scheduled will is cancelled
	// the will journal (journal.go): when it was registered, its file ("": none)
	registered time.Time
	journal    string
	// a retained will the store refused: sent without x-opt-mqtt-stored, so
	// the gateways' observers store it (observer.go)
	notStored bool
}

var errNotAddress = errors.New("not an address of the space")

// sendable is the check every message from a client passes, a PUBLISH and
// a will alike: the topic must be an address of the table, and the router
// must let the client's own connection attach a sender to it (its send
// permission). Returns the address and the (cached) sender.
func (b *Bridge) sendable(l *link, topic string) (string, *amqp.Sender, error) {
	address := b.table.Load().Address(topic)
	if address == "" {
		return "", nil, errNotAddress
	}
	s, err := b.sender(l, address)
	return address, s, err
}

// notAuthorized: the refusal is the client's (no such address, no send
// permission), not a failure of the router connection.
func notAuthorized(err error) bool {
	var le *amqp.LinkError
	var ae *amqp.Error
	return errors.Is(err, errNotAddress) ||
		(errors.As(err, &le) && le.RemoteErr != nil && le.RemoteErr.Condition == amqp.ErrCondUnauthorizedAccess) ||
		(errors.As(err, &ae) && ae.Condition == amqp.ErrCondUnauthorizedAccess)
}

// probeSend: a PUBLISH learns the router's verdict on its send permission
// at its first transfer (qdrouterd answers the attach of a sender it
// refuses, then detaches it with amqp:unauthorized-access); a will has no
// transfer at CONNECT. So a throwaway sender to the address is attached and
// closed after probeWindow: closing returns the router's detach error, if
// any (the same probe as a SUBSCRIBE's recv, bridge.go attach).
func (b *Bridge) probeSend(l *link, address string) error {
	ctx, cancel := context.WithTimeout(l.ctx, b.Timeout)
	defer cancel()
	s, err := l.sess.NewSender(ctx, address, nil)
	if err != nil {
		return err
	}
	time.Sleep(probeWindow)
	return s.Close(ctx)
}

// newMessage is the AMQP message of a PUBLISH or a will (README.md mapping).
func newMessage(address string, payload []byte, qos byte, retain bool) *amqp.Message {
	msg := amqp.NewMessage(payload)
	msg.Header = &amqp.MessageHeader{Durable: qos > 0}
	msg.Properties = &amqp.MessageProperties{To: &address}
	msg.Annotations = amqp.Annotations{annotationQos: int32(qos)}
	if retain {
		// stored first (retain, journal.go) when the gateway has a store;
		// without one it has no observer either (observer.go)
		msg.Annotations[annotationRetain] = true
		msg.Annotations[annotationStored] = true
	}
	return msg
}

// registerWill takes the client's will (if any) from mochi and checks it
// as a PUBLISH is checked. A nil will and nil error: the client has none.
func (b *Bridge) registerWill(cl *mqtt.Client, l *link) (*will, error) {
	cw := cl.Properties.Will
	cl.Properties.Will = mqtt.Will{} // mochi must not publish it (locally) too
	if atomic.LoadUint32(&cw.Flag) == 0 {
		return nil, nil
	}
	address, _, err := b.sendable(l, cw.TopicName)
	if err == nil {
		err = b.probeSend(l, address)
	}
	if err != nil {
		return nil, err
	}
	w := &will{client: cl.ID, user: l.user, address: address, stop: make(chan struct{}), registered: time.Now(),
		delay: time.Duration(cw.WillDelayInterval) * time.Second,
		pk: packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: cw.Qos, Retain: cw.Retain},
			TopicName: cw.TopicName, Payload: cw.Payload}}
	if cl.Properties.ProtocolVersion < 5 {
		w.delay = 0 // 3.1.1 has no will delay
	}
	return w, nil
}

// willDue: does this way of going away publish the will? Not after a
// normal DISCONNECT (mochi's Read ends without error, stop cause
// "disconnected"); yes after everything else, DISCONNECT 0x04 included.
func willDue(err, cause error) bool {
	return !(err == nil && errors.Is(cause, packets.CodeDisconnect))
}

// takenOver: the connection was closed for a new one with its client id.
func takenOver(cause error) bool {
	return errors.Is(cause, packets.ErrSessionTakenOver)
}

// delayedWills: the scheduled wills (client id -> wills; usually one).
type delayedWills struct {
	mu sync.Mutex
	m  map[string][]*will
}

func (d *delayedWills) add(w *will) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string][]*will{}
	}
	d.m[w.client] = append(d.m[w.client], w)
}

func (d *delayedWills) remove(w *will) {
	d.mu.Lock()
	defer d.mu.Unlock()
	removeFrom(d.m, w.client, w)
}

// cancel the scheduled wills of a client id registered by the same user
// (another user's connection with that id does not cancel them); returns
// how many.
func (d *delayedWills) cancel(client, user string) int {
	d.mu.Lock()
	ws := append([]*will(nil), d.m[client]...)
	d.mu.Unlock()
	n := 0
	for _, w := range ws {
		if w.user == user && w.state.CompareAndSwap(willScheduled, willDone) {
			close(w.stop)
			d.remove(w)
			n++
		}
	}
	return n
}

// scheduleWill puts a delayed will into b.delayed unless a connection of
// the same client id and user is up already (it came within the delay:
// [MQTT-3.1.3-9]); false then. Under b.mu, as register is: a new connection
// is either seen here or finds the will when it cancels the scheduled ones.
func (b *Bridge) scheduleWill(cl *mqtt.Client, user string, w *will) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for c, l := range b.links {
		if c != cl && c.ID == cl.ID && l.user == user {
			return false
		}
	}
	w.state.Store(willScheduled)
	b.delayed.add(w)
	return true
}

// register adds an accepted connection and cancels the delayed wills of
// its client id and user, in one step under b.mu (see scheduleWill): the
// old connection of a takeover may reach its OnDisconnect on either side
// of it. Returns how many wills were cancelled.
func (b *Bridge) register(cl *mqtt.Client, l *link, cs *connState) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.links[cl] = l
	b.conns[cl] = cs
	return b.delayed.cancel(cl.ID, l.user)
}

// goneWithWill runs at OnDisconnect when the will is due: now, or after its
// delay unless cancelled. l's connection is closed when the will is done.
func (b *Bridge) goneWithWill(cl *mqtt.Client, l *link, w *will) {
	if w.delay == 0 {
		b.fireWill(cl, l, w, willRegistered)
		return
	}
	if l.movedAway.Load() || !b.scheduleWill(cl, l.user, w) {
		// the new connection came within the delay [MQTT-3.1.3-9], here or on another instance
		w.state.Store(willDone)
		b.Journal.Remove(w)
		b.Log.Info("will cancelled: the client reconnected within the will delay", "client", cl.ID,
			"taken_over", takenOver(cl.StopCause()), "elsewhere", l.movedAway.Load())
		b.closeLink(l)
		return
	}
	b.Log.Info("will scheduled", "client", cl.ID, "delay", w.delay)
	go func() {
		t := time.NewTimer(w.delay)
		defer t.Stop()
		select {
		case <-t.C:
			b.delayed.remove(w)
			b.fireWill(cl, l, w, willScheduled)
		case <-w.stop:
			b.Log.Info("will cancelled: the client reconnected within the will delay", "client", w.client)
			b.Journal.Remove(w)
			b.closeLink(l)
		}
	}()
}

// fireWill sends the will once: a retained will is stored first (as a
// retained PUBLISH), then sent; QoS 0 pre-settled, QoS 1 durable and
// unsettled until the router accepted it (released or a broken connection:
// tried again, redialled with the client's credentials).
func (b *Bridge) fireWill(cl *mqtt.Client, l *link, w *will, from int32) {
	if !w.state.CompareAndSwap(from, willSending) {
		return
	}
	defer w.state.Store(willDone)
	defer b.Journal.Remove(w) // sent, or given up: not tried again after a restart
	conn := l
	defer func() {
		b.closeLink(l)
		if conn != l {
			b.closeLink(conn)
		}
	}()
	if w.pk.FixedHeader.Retain {
		if err := b.retain(cl, w.pk); err != nil {
			b.Log.Info("will not stored as retained; sent all the same", "client", w.client, "error", err)
			w.notStored = true
		}
	}
	var err error
	for attempt := 1; attempt <= willAttempts; attempt++ {
		if err = b.sendWill(conn, w); err == nil {
			b.Log.Info("will published", "client", w.client, "address", w.address, "qos", w.pk.FixedHeader.Qos,
				"attempt", attempt)
			return
		}
		b.Log.Info("will not sent", "client", w.client, "address", w.address, "attempt", attempt, "error", err)
		var na *notAccepted
		if notAuthorized(err) || (errors.As(err, &na) && na.rejected()) {
			return
		}
		var ce *amqp.ConnError
		var se *amqp.SessionError
		if errors.As(err, &ce) || errors.As(err, &se) || errors.Is(err, context.DeadlineExceeded) {
			if conn != l {
				b.closeLink(conn)
			}
			next, _, _, derr := b.dial(cl, l.user, l.password)
			if derr != nil {
				b.Log.Info("will: router not reachable", "client", w.client, "error", derr)
				conn = l
				continue
			}
			conn = next
		}
	}
}

// sendWill sends once on conn (its own context: the client's is cancelled).
func (b *Bridge) sendWill(conn *link, w *will) error {
	_, s, err := b.sendable(conn, w.pk.TopicName)
	if err != nil {
		return err
	}
	msg := willMessage(w)
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	if w.pk.FixedHeader.Qos == 0 {
		return s.Send(ctx, msg, &amqp.SendOptions{Settled: true})
	}
	r, err := s.SendWithReceipt(ctx, msg, nil)
	if err != nil {
		return err
	}
	state, err := r.Wait(ctx)
	if err != nil {
		return err
	}
	if _, ok := state.(*amqp.StateAccepted); !ok {
		return &notAccepted{state}
	}
	return nil
}

// willMessage: a will is a PUBLISH made later; its MQTT 5 will delay
// travels along (mapping.py will_to_amqp, x-opt-mqtt-will-delay, seconds).
func willMessage(w *will) *amqp.Message {
	msg := newMessage(w.address, w.pk.Payload, w.pk.FixedHeader.Qos, w.pk.FixedHeader.Retain)
	if w.delay > 0 {
		msg.Annotations[annotationWillDelay] = int64(w.delay / time.Second)
	}
	if w.notStored {
		delete(msg.Annotations, annotationStored)
	}
	return msg
}

type notAccepted struct{ state amqp.DeliveryState }

func (e *notAccepted) rejected() bool {
	_, ok := e.state.(*amqp.StateRejected)
	return ok
}

func (e *notAccepted) Error() string {
	if e.rejected() {
		return "will rejected by the router"
	}
	return "will not accepted by the router"
}
