package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

var errLinkClosed = errors.New("the session's AMQP links are closed")

// sender: one link per address on the client's session, in mixed mode:
// QoS 0 transfers pre-settled, QoS 1 and 2 unsettled, in the order of the
// client's publishes. The router refuses the attach without send. Not
// bound to the link's context: a will is sent after the client is gone.
func (b *Bridge) sender(l *link, address string) (*amqp.Sender, error) {
	mode := amqp.SenderSettleModeMixed
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.senders[address]; s != nil {
		return s, nil
	}
	if l.closed.Load() { // closeLink ran: a new sender would outlive it on the shared connection
		return nil, errLinkClosed
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	s, err := l.sess.NewSender(ctx, address, &amqp.SenderOptions{SettlementMode: &mode})
	if err != nil {
		return nil, err
	}
	l.senders[address] = s
	return s, nil
}

// OnPublish sends to the address of the topic and answers mochi with
// ErrRejectPacket (no local fan-out, no retained store in mochi); ackLoop
// writes the PUBACK / PUBREC once the router accepted. A QoS 2 packet id
// the session still remembers (qos2.go) is not sent again: its PUBREC
// follows the first one's outcome.
func (b *Bridge) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	l, cs := b.linkOf(cl), b.connOf(cl)
	if l == nil || cs == nil {
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, packets.ErrRejectPacket
	}
	if cs.stashed { // mochi dropped the delivery of this id (bridge.go OnPacketRead)
		cl.State.Inflight.Set(cs.stash)
		cs.stashed = false
	}
	var e *inbound
	if pk.FixedHeader.Qos == 2 {
		var fresh bool
		var err error
		if e, fresh, err = l.in.begin(pk.PacketID); err != nil {
			b.Log.Info("publish refused: QoS 2 receive maximum exceeded", "client", cl.ID, "max", l.in.max)
			b.Metrics.Publish(2, pubRefused)
			if cl.Properties.ProtocolVersion == 5 {
				_ = b.Server.DisconnectClient(cl, packets.ErrReceiveMaximum)
			} else {
				cl.Stop(packets.ErrReceiveMaximum)
			}
			return pk, packets.ErrRejectPacket
		}
		if !fresh {
			b.Log.Debug("QoS 2 resend not forwarded again", "client", cl.ID, "packet_id", pk.PacketID)
			b.enqueue(cl, l, cs, pending{id: pk.PacketID, qos: 2, e: e, dup: true})
			return pk, packets.ErrRejectPacket
		}
	}
	unsettle := func(code packets.Code) {
		if e != nil {
			l.in.settle(pk.PacketID, e, false, code.Code)
		}
	}
	address, s, err := b.sendable(l, pk.TopicName) // the will's check too (will.go)
	if errors.Is(err, errNotAddress) {
		unsettle(packets.ErrNotAuthorized)
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, packets.ErrRejectPacket
	}
	if err != nil {
		b.Log.Info("publish refused by the router", "client", cl.ID, "user", l.user, "address", address, "error", err)
		unsettle(ackCode(err))
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, b.refuse(cl, pk, err)
	}
	msg := newMessage(address, pk.Payload, pk.FixedHeader.Qos, pk.FixedHeader.Retain)
	if pk.FixedHeader.Retain {
		if err := b.retain(cl, pk); err != nil {
			unsettle(packets.ErrUnspecifiedError)
			b.Metrics.Publish(pk.FixedHeader.Qos, pubFailed)
			return pk, b.refuse(cl, pk, err)
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, b.Timeout)
	defer cancel()
	if pk.FixedHeader.Qos == 0 {
		if err := s.Send(ctx, msg, &amqp.SendOptions{Settled: true}); err != nil {
			b.Log.Info("QoS 0 publish dropped", "client", cl.ID, "address", address, "error", err)
			b.Metrics.Publish(0, pubFailed)
		} else {
			b.Metrics.Publish(0, pubAccepted)
		}
		return pk, packets.ErrRejectPacket
	}
	r, err := s.SendWithReceipt(ctx, msg, nil)
	if err != nil {
		b.Log.Info("publish not sent", "client", cl.ID, "address", address, "error", err)
		unsettle(ackCode(err))
		b.Metrics.Publish(pk.FixedHeader.Qos, sendOutcome(err))
		return pk, b.refuse(cl, pk, err)
	}
	b.enqueue(cl, l, cs, pending{receipt: r, id: pk.PacketID, qos: pk.FixedHeader.Qos, e: e})
	return pk, packets.ErrRejectPacket
}

// enqueue: at most receive_maximum publishes wait for the router; one more
// waits here (the client's reading pauses).
func (b *Bridge) enqueue(cl *mqtt.Client, l *link, cs *connState, p pending) {
	b.startAcks(cl, l, cs)
	select {
	case cs.acks <- p:
	case <-cs.done:
	}
}

// ackCode: the MQTT 5 PUBACK / PUBREC reason of a publish the router did
// not take: 0x87 for a missing send permission, else 0x80.
func ackCode(err error) packets.Code {
	var le *amqp.LinkError
	if errors.As(err, &le) && le.RemoteErr != nil && le.RemoteErr.Condition == amqp.ErrCondUnauthorizedAccess {
		return packets.ErrNotAuthorized
	}
	return packets.ErrUnspecifiedError
}

// refuse a QoS 1 / 2 publish the router did not take: MQTT 5 gets PUBACK
// (mochi writes it) or PUBREC (written here) 0x87 (no send permission) or
// 0x80; MQTT 3.1.1 has no negative acknowledgement: the connection is
// closed.
func (b *Bridge) refuse(cl *mqtt.Client, pk packets.Packet, err error) error {
	if pk.FixedHeader.Qos == 0 {
		return packets.ErrRejectPacket
	}
	if cl.Properties.ProtocolVersion == 5 {
		code := ackCode(err)
		if pk.FixedHeader.Qos == 1 {
			return code
		}
		_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubrec},
			PacketID: pk.PacketID, ReasonCode: code.Code})
		return packets.ErrRejectPacket
	}
	cl.Stop(err)
	return packets.ErrRejectPacket
}

// sendOutcome: the router's detach for a missing send permission (it may
// come after the attach, at the first transfer) is a refusal; any other
// error a failure.
func sendOutcome(err error) string {
	if ackCode(err) == packets.ErrNotAuthorized {
		return pubRefused
	}
	return pubFailed
}

// outcome waits for the router's disposition of p (a QoS 2 resend: for
// the first one's, recorded in the session).
func (b *Bridge) outcome(cs *connState, p pending) (packets.Code, string) {
	ctx, cancel := context.WithTimeout(cs.waits, b.Timeout)
	defer cancel()
	if p.dup {
		select {
		case <-p.e.done:
			if p.e.accepted {
				return packets.CodeSuccess, pubAccepted
			}
			return packets.Code{Code: p.e.code}, pubRefused
		case <-ctx.Done():
			return packets.ErrUnspecifiedError, pubFailed
		}
	}
	state, err := p.receipt.Wait(ctx)
	if err != nil {
		return ackCode(err), sendOutcome(err)
	}
	if _, ok := state.(*amqp.StateAccepted); !ok {
		return packets.ErrUnspecifiedError, pubRefused
	}
	return packets.CodeSuccess, pubAccepted
}

// startAcks: a connection's ackLoop runs from its first QoS 1 / 2 publish
// (an idle client holds no goroutine of the bridge), or from OnDisconnect.
func (b *Bridge) startAcks(cl *mqtt.Client, l *link, cs *connState) {
	cs.acksOnce.Do(func() { go b.ackLoop(cl, l, cs) })
}

// ackLoop writes PUBACKs / PUBRECs in the order of the publishes, each
// after the router's outcome: accepted -> success (a QoS 2 id is then
// remembered until its PUBREL); else MQTT 5 its reason code, MQTT 3.1.1 no
// acknowledgement and the connection closed (the client resends on
// reconnect). After the client went away it still records the outcomes
// (a QoS 2 resend on the next connection must find them), until cs.acks
// is closed and empty.
func (b *Bridge) ackLoop(cl *mqtt.Client, l *link, cs *connState) {
	defer close(cs.drained)
	stopped := false
	for p := range cs.acks {
		code, outcome := b.outcome(cs, p)
		if p.qos == 2 && !p.dup {
			l.in.settle(p.id, p.e, code == packets.CodeSuccess, code.Code)
			if code == packets.CodeSuccess && !stopped && !cs.gone() {
				// the id in the record before the PUBREC: a resend after a restart
				// is answered, not forwarded (a gone client's: OnDisconnect writes)
				b.saveSession(cl, l, 0)
			}
		}
		if !p.dup {
			b.Metrics.Publish(p.qos, outcome) // before the acknowledgement: a client that has it sees the count
		}
		if stopped {
			continue
		}
		if code != packets.CodeSuccess {
			b.Log.Info("publish not accepted by the router", "client", cl.ID, "qos", p.qos, "outcome", outcome,
				"reason", fmt.Sprintf("0x%02x", code.Code))
			if cl.Properties.ProtocolVersion != 5 {
				cl.Stop(fmt.Errorf("publish not accepted by the router"))
				stopped = true
				continue
			}
		}
		_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: ackType(p.qos)},
			PacketID: p.id, ReasonCode: code.Code})
	}
}

func payload(m *amqp.Message) []byte {
	if len(m.Data) > 0 {
		var out []byte
		for _, d := range m.Data {
			out = append(out, d...)
		}
		return out
	}
	switch v := m.Value.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	case nil:
		return nil
	default:
		return []byte(fmt.Sprint(v))
	}
}

// qosOf: the annotation's QoS, else 1 when durable, else 0 (mapping.py's
// amqp_to_publish), capped by the subscription's granted QoS.
func qosOf(m *amqp.Message, granted byte) byte {
	q := byte(0)
	if m.Header != nil && m.Header.Durable {
		q = 1
	}
	switch v := m.Annotations[annotationQos].(type) {
	case int32:
		if v >= 0 && v <= 2 {
			q = byte(v)
		}
	case int64:
		if v >= 0 && v <= 2 {
			q = byte(v)
		}
	case uint8:
		if v <= 2 {
			q = v
		}
	}
	if q > granted {
		q = granted
	}
	return q
}

// receive delivers what an address's receiver gets to the session's
// connection (session.go): QoS 0 written and accepted; QoS 1 accepted on
// the router only when the client's PUBACK came (OnQosComplete), QoS 2 at
// its PUBREC (bridge.go pubrec); the receiver's credit (receive_maximum)
// bounds the unacknowledged ones.
func (b *Bridge) receive(l *link, r *amqp.Receiver, m *amqp.Message, granted byte, rap bool) {
	for {
		if m == nil {
			var err error
			if m, err = r.Receive(l.ctx, nil); err != nil {
				return
			}
		}
		b.deliver(l, r, m, granted, rap)
		m = nil
	}
}

// deliver one message to the session's connection. A QoS 1 / 2 message
// that cannot be written because the client is gone while its session
// stays is kept in that client's in-flight messages, unsettled: mochi
// hands them to the next connection of the session and resends them.
func (b *Bridge) deliver(l *link, r *amqp.Receiver, m *amqp.Message, granted byte, rap bool) {
	cl := l.owned()
	if cl == nil {
		_ = r.ReleaseMessage(context.Background(), m)
		return
	}
	defer l.dmu.RUnlock()
	out := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qosOf(m, granted)},
		TopicName: r.Address(), Payload: payload(m), Created: time.Now().Unix()}
	out.FixedHeader.Retain = rap && retainFlag(m)
	if out.FixedHeader.Qos == 0 {
		if cl.WritePacket(out) == nil {
			b.Metrics.Delivered(0)
		}
		_ = r.AcceptMessage(l.ctx, m)
		return
	}
	id, err := cl.NextPacketID()
	if err != nil {
		_ = r.ReleaseMessage(l.ctx, m)
		return
	}
	out.PacketID = uint16(id)
	cl.State.Inflight.Set(out)
	l.mu.Lock()
	l.deliveries[out.PacketID] = delivery{r: r, m: m}
	l.mu.Unlock()
	if err := cl.WritePacket(out); err == nil {
		b.Metrics.Delivered(out.FixedHeader.Qos)
		return
	}
	if cl.Closed() && !expires(cl) {
		return // kept for the session's next connection
	}
	cl.State.Inflight.Delete(out.PacketID)
	l.mu.Lock()
	delete(l.deliveries, out.PacketID)
	l.mu.Unlock()
	_ = r.ReleaseMessage(l.ctx, m)
}

// OnQosComplete: the client's PUBACK settles the AMQP delivery (a QoS 2
// delivery was settled at its PUBREC).
func (b *Bridge) OnQosComplete(cl *mqtt.Client, pk packets.Packet) {
	l := b.linkOf(cl)
	if l == nil || pk.FixedHeader.Type != packets.Puback {
		return
	}
	l.mu.Lock()
	d, ok := l.deliveries[pk.PacketID]
	delete(l.deliveries, pk.PacketID)
	l.mu.Unlock()
	if ok {
		_ = d.r.AcceptMessage(l.ctx, d.m)
	}
}

// OnDisconnect: the publishes waiting for the router get their outcome
// first (at most the router timeout; QoS 2 ids are recorded in the
// session). A session that stays (session.go) keeps its AMQP connection;
// else it is closed: unacknowledged deliveries go back to the router
// (released). A due will (willDue) is sent on the client's connection, kept
// open, its receivers closed, until the will was sent or cancelled
// (will.go); on a connection of its own when the session stays.
func (b *Bridge) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	b.mu.Lock()
	l, cs := b.links[cl], b.conns[cl]
	delete(b.links, cl)
	delete(b.conns, cl)
	b.mu.Unlock()
	if l == nil || cs == nil {
		return
	}
	b.release(l.user)
	close(cs.done)
	close(cs.acks)
	b.startAcks(cl, l, cs) // none started: it closes drained at once
	t := time.AfterFunc(b.Timeout, cs.stopWait)
	<-cs.drained
	t.Stop()
	cs.stopWait()
	keep, own := b.detach(cl, l, expire)
	if own && keep {
		b.saveSession(cl, l, time.Now().Unix()) // its expiry runs from now
	} else if own {
		b.endSession(cl.ID, l)
	}
	b.Log.Info("disconnected", "client", cl.ID, "user", l.user, "session_kept", keep, "error", err)
	if cs.will == nil || !willDue(err, cl.StopCause()) {
		b.Journal.Remove(cs.will) // a normal DISCONNECT: no will
		if !keep {
			b.closeLink(l)
		}
		return
	}
	if keep {
		if wl := b.willLink(cl, l); wl != nil {
			b.goneWithWill(cl, wl, cs.will)
		} else {
			b.Journal.Remove(cs.will) // given up, as fireWill does
		}
		return
	}
	l.mu.Lock()
	rs := l.takeSubs()
	l.mu.Unlock()
	closeAll(rs) // nothing more is routed to a gone client
	l.cancel()
	b.goneWithWill(cl, l, cs.will)
}
