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

// sender: one link per address on the client's session, in mixed mode:
// QoS 0 transfers pre-settled, QoS 1 unsettled, in the order of the
// client's publishes. The router refuses the attach without send.
func (b *Bridge) sender(l *link, address string) (*amqp.Sender, error) {
	mode := amqp.SenderSettleModeMixed
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.senders[address]; s != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(l.ctx, b.Timeout)
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
// writes the PUBACK once the router accepted.
func (b *Bridge) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	l := b.linkOf(cl)
	if l == nil {
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, packets.ErrRejectPacket
	}
	address, s, err := b.sendable(l, pk.TopicName) // the will's check too (will.go)
	if errors.Is(err, errNotAddress) {
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, packets.ErrRejectPacket
	}
	if err != nil {
		b.Log.Info("publish refused by the router", "client", cl.ID, "user", l.user, "address", address, "error", err)
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
		return pk, b.refuse(cl, pk, err)
	}
	msg := newMessage(address, pk.Payload, pk.FixedHeader.Qos, pk.FixedHeader.Retain)
	if pk.FixedHeader.Retain {
		if err := b.retain(cl, pk); err != nil {
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
		b.Metrics.Publish(pk.FixedHeader.Qos, sendOutcome(err))
		return pk, b.refuse(cl, pk, err)
	}
	select {
	case l.acks <- pending{receipt: r, id: pk.PacketID}:
	case <-l.done:
	}
	return pk, packets.ErrRejectPacket
}

// refuse a QoS 1 publish the router did not take: MQTT 5 gets PUBACK 0x87
// (no send permission) or 0x80 (mochi writes it); MQTT 3.1.1 has no
// negative PUBACK: the connection is closed.
func (b *Bridge) refuse(cl *mqtt.Client, pk packets.Packet, err error) error {
	if pk.FixedHeader.Qos == 0 {
		return packets.ErrRejectPacket
	}
	if cl.Properties.ProtocolVersion == 5 {
		var le *amqp.LinkError
		if errors.As(err, &le) && le.RemoteErr != nil && le.RemoteErr.Condition == amqp.ErrCondUnauthorizedAccess {
			return packets.ErrNotAuthorized
		}
		return packets.ErrUnspecifiedError
	}
	cl.Stop(err)
	return packets.ErrRejectPacket
}

// sendOutcome: the router's detach for a missing send permission (it may
// come after the attach, at the first transfer) is a refusal; any other
// error a failure.
func sendOutcome(err error) string {
	var le *amqp.LinkError
	if errors.As(err, &le) && le.RemoteErr != nil && le.RemoteErr.Condition == amqp.ErrCondUnauthorizedAccess {
		return pubRefused
	}
	return pubFailed
}

// ackLoop writes PUBACKs in the order of the publishes, each after the
// router's outcome: accepted -> success; else MQTT 5 0x80, MQTT 3.1.1 no
// PUBACK and the connection closed (the client resends on reconnect).
func (b *Bridge) ackLoop(cl *mqtt.Client, l *link) {
	for {
		select {
		case <-l.done:
			return
		case p := <-l.acks:
			state, err := p.receipt.Wait(l.ctx)
			code := packets.CodeSuccess
			if _, ok := state.(*amqp.StateAccepted); ok && err == nil {
				b.Metrics.Publish(1, pubAccepted) // before the PUBACK: a client that has it sees the count
			} else if err != nil {
				b.Metrics.Publish(1, sendOutcome(err))
			} else {
				b.Metrics.Publish(1, pubRefused)
			}
			if _, ok := state.(*amqp.StateAccepted); !ok || err != nil {
				b.Log.Info("publish not accepted by the router", "client", cl.ID, "state", fmt.Sprintf("%T", state), "error", err)
				if cl.Properties.ProtocolVersion != 5 {
					cl.Stop(fmt.Errorf("publish not accepted by the router"))
					return
				}
				code = packets.ErrUnspecifiedError
			}
			_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback},
				PacketID: p.id, ReasonCode: code.Code})
		}
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

// receive delivers what an address's receiver gets to the client: QoS 0
// written and accepted; QoS 1 accepted on the router only when the client's
// PUBACK came (OnQosComplete); the receiver's credit (receive_maximum)
// bounds the unacknowledged ones.
func (b *Bridge) receive(cl *mqtt.Client, l *link, r *amqp.Receiver, m *amqp.Message, granted byte, rap bool) {
	topic := r.Address()
	for {
		if m == nil {
			var err error
			if m, err = r.Receive(l.ctx, nil); err != nil {
				return
			}
		}
		out := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: qosOf(m, granted)},
			TopicName: topic, Payload: payload(m), Created: time.Now().Unix()}
		out.FixedHeader.Retain = rap && retainFlag(m)
		if out.FixedHeader.Qos == 0 {
			if cl.WritePacket(out) == nil {
				b.Metrics.Delivered(0)
			}
			_ = r.AcceptMessage(l.ctx, m)
			m = nil
			continue
		}
		id, err := cl.NextPacketID()
		if err != nil {
			_ = r.ReleaseMessage(l.ctx, m)
			m = nil
			continue
		}
		out.PacketID = uint16(id)
		cl.State.Inflight.Set(out)
		l.mu.Lock()
		l.deliveries[out.PacketID] = delivery{r: r, m: m}
		l.mu.Unlock()
		if err := cl.WritePacket(out); err != nil {
			cl.State.Inflight.Delete(out.PacketID)
			l.mu.Lock()
			delete(l.deliveries, out.PacketID)
			l.mu.Unlock()
			_ = r.ReleaseMessage(l.ctx, m)
		} else {
			b.Metrics.Delivered(1)
		}
		m = nil
	}
}

// OnQosComplete: the client's PUBACK settles the AMQP delivery.
func (b *Bridge) OnQosComplete(cl *mqtt.Client, pk packets.Packet) {
	l := b.linkOf(cl)
	if l == nil {
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

// OnDisconnect closes the client's AMQP connection: unacknowledged
// deliveries go back to the router (released), the user's slot is freed.
// A due will (willDue) keeps the connection, its receivers closed, until
// the will was sent or cancelled (will.go).
func (b *Bridge) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	b.mu.Lock()
	l := b.links[cl]
	delete(b.links, cl)
	b.mu.Unlock()
	if l == nil {
		return
	}
	b.release(l.user)
	b.Log.Info("disconnected", "client", cl.ID, "user", l.user, "error", err)
	close(l.done)
	l.cancel()
	if l.will == nil || !willDue(err, cl.StopCause()) {
		_ = l.conn.Close()
		return
	}
	l.mu.Lock()
	var rs []*sub
	for f, s := range l.subs {
		rs = append(rs, s...)
		delete(l.subs, f)
	}
	for f, s := range l.staged {
		rs = append(rs, s...)
		delete(l.staged, f)
	}
	l.mu.Unlock()
	closeAll(rs) // nothing more is routed to a gone client
	b.goneWithWill(cl, l, l.will)
}
