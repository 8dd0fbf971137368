// Package main is the feasibility prototype of the MQTT gateway of a
// standard address space (issue 21, docs/mqtt-design.md): an embedded
// mochi-mqtt broker whose hooks bridge every MQTT client to the router
// network over AMQP 1.0 (go-amqp).
//
// What it proves (and nothing more):
//   - a client's CONNECT is authenticated by opening an AMQP connection to
//     the space's router listener with the client's own user and password
//     (SASL PLAIN; the router relays it to the auth service, which checks
//     the space's Keycloak realm); a refused SASL exchange refuses CONNECT;
//   - QoS 0 publishes are sent pre-settled; QoS 1 publishes are sent
//     unsettled and PUBACK is written only after the router's disposition
//     said "accepted" (pipelined: many in flight per client, acks in order);
//   - mochi's own local fan-out is suppressed for what went to the routers,
//     so a subscriber on the same gateway gets a message once (from AMQP).
//
// Not in the prototype: QoS 2 to AMQP, retained messages and sessions kept
// in the space's brokers, wills published by a second instance, TLS.
package main

import (
	"context"

	"log/slog"
	"sync"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// pending is one QoS 1 publish waiting for the router's disposition.
type pending struct {
	receipt amqp.SendReceipt
	id      uint16
}

// link is the AMQP side of one MQTT client: its own connection (its own
// identity on the router), one session, one sender per address and mode.
type link struct {
	conn    *amqp.Conn
	sess    *amqp.Session
	mu      sync.Mutex
	senders map[string]*amqp.Sender
	acks    chan pending
	done    chan struct{}
}

// Bridge is the mochi hook.
type Bridge struct {
	mqtt.HookBase
	Router  string // host:port of the space's router listener
	Space   string // the tenant: the listener adds "<space>/" inside the router
	Log     *slog.Logger
	Server  *mqtt.Server
	mu      sync.Mutex
	links   map[string]*link
	subs    map[string]*amqp.Receiver
	Timeout time.Duration
}

func (b *Bridge) ID() string { return "enmasse-amqp-bridge" }

func (b *Bridge) Provides(e byte) bool {
	switch e {
	case mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish, mqtt.OnDisconnect, mqtt.OnSubscribed:
		return true
	}
	return false
}

// OnConnectAuthenticate: the router (and behind it the auth service and
// Keycloak) decides; the gateway stores no password.
func (b *Bridge) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	opts := &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous(), ContainerID: "mqtt-" + cl.ID,
		IdleTimeout: 0, MaxSessions: 1}
	if len(pk.Connect.Username) > 0 {
		opts.SASLType = amqp.SASLTypePlain(string(pk.Connect.Username), string(pk.Connect.Password))
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	conn, err := amqp.Dial(ctx, "amqp://"+b.Router, opts)
	if err != nil {
		b.Log.Info("connect refused by the router", "client", cl.ID, "error", err)
		return false
	}
	sess, err := conn.NewSession(ctx, nil)
	if err != nil {
		conn.Close()
		return false
	}
	l := &link{conn: conn, sess: sess, senders: map[string]*amqp.Sender{},
		acks: make(chan pending, 1024), done: make(chan struct{})}
	go b.ackLoop(cl, l)
	b.mu.Lock()
	if old := b.links[cl.ID]; old != nil { // a takeover: the old connection goes
		old.close()
	}
	b.links[cl.ID] = l
	b.mu.Unlock()
	return true
}

// OnACLCheck: the router enforces send/recv per address on the user's own
// connection (address-authz); the prototype lets everything through here.
func (b *Bridge) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool { return true }

// sender: one link per address in mixed mode (qdrouterd answers "mixed"
// whatever is asked): QoS 0 transfers pre-settled, QoS 1 unsettled, in the
// order of the client's publishes.
func (b *Bridge) sender(l *link, address string) (*amqp.Sender, error) {
	key := address
	mode := amqp.SenderSettleModeMixed
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.senders[key]; s != nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	s, err := l.sess.NewSender(ctx, address, &amqp.SenderOptions{SettlementMode: &mode})
	if err != nil {
		return nil, err
	}
	l.senders[key] = s
	return s, nil
}

// OnPublish sends to the address of the topic and answers mochi with
// ErrRejectPacket: mochi then neither acknowledges nor fans out locally;
// ackLoop writes the PUBACK once the router accepted.
func (b *Bridge) OnPublish(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if cl.Net.Inline { // what came back from the routers: deliver locally
		return pk, nil
	}
	b.mu.Lock()
	l := b.links[cl.ID]
	b.mu.Unlock()
	if l == nil {
		return pk, packets.ErrRejectPacket
	}
	address := TopicToAddress(pk.TopicName)
	msg := amqp.NewMessage(pk.Payload)
	msg.Header = &amqp.MessageHeader{Durable: pk.FixedHeader.Qos > 0}
	msg.Properties = &amqp.MessageProperties{To: &address}
	msg.Annotations = amqp.Annotations{"x-opt-mqtt-qos": int32(pk.FixedHeader.Qos)}
	if pk.FixedHeader.Retain {
		msg.Annotations["x-opt-mqtt-retain"] = true
	}
	s, err := b.sender(l, address)
	if err != nil {
		b.Log.Info("sender refused", "client", cl.ID, "address", address, "error", err)
		return pk, b.refuse(cl, pk, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	if pk.FixedHeader.Qos == 0 {
		_ = s.Send(ctx, msg, &amqp.SendOptions{Settled: true})
		return pk, packets.ErrRejectPacket
	}
	r, err := s.SendWithReceipt(ctx, msg, nil)
	if err != nil {
		return pk, b.refuse(cl, pk, err)
	}
	l.acks <- pending{receipt: r, id: pk.PacketID}
	return pk, packets.ErrRejectPacket
}

// refuse a publish the router did not take: QoS 0 is dropped; MQTT 5 gets
// PUBACK with a reason code (mochi writes it); MQTT 3.1.1 has no negative
// PUBACK: the connection is closed, the client resends after reconnecting.
func (b *Bridge) refuse(cl *mqtt.Client, pk packets.Packet, err error) error {
	if pk.FixedHeader.Qos == 0 {
		return packets.ErrRejectPacket
	}
	if cl.Properties.ProtocolVersion == 5 {
		return packets.ErrNotAuthorized
	}
	cl.Stop(err)
	return packets.ErrRejectPacket
}

// ackLoop writes PUBACKs in the order of the publishes, each after the
// router's outcome: accepted -> success; anything else -> no ack
// (MQTT 3.1.1) so that the client resends, or a v5 reason code.
func (b *Bridge) ackLoop(cl *mqtt.Client, l *link) {
	for {
		select {
		case <-l.done:
			return
		case p := <-l.acks:
			state, err := p.receipt.Wait(context.Background())
			code := packets.CodeSuccess
			if _, ok := state.(*amqp.StateAccepted); !ok || err != nil {
				if cl.Properties.ProtocolVersion != 5 {
					continue
				}
				code = packets.ErrImplementationSpecificError
			}
			ack := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}, PacketID: p.id,
				ReasonCode: code.Code}
			_ = cl.WritePacket(ack)
		}
	}
}

// OnSubscribed attaches one receiver per (non-wildcard) filter for the
// whole gateway and republishes what arrives through mochi's inline client,
// which delivers to the local subscribers of that topic.
func (b *Bridge) OnSubscribed(cl *mqtt.Client, pk packets.Packet, codes []byte) {
	b.mu.Lock()
	l := b.links[cl.ID]
	b.mu.Unlock()
	if l == nil {
		return
	}
	for _, f := range pk.Filters {
		b.mu.Lock()
		_, have := b.subs[f.Filter]
		b.mu.Unlock()
		if have || !ValidTopicName(f.Filter) {
			continue // wildcards: not in the prototype
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
		r, err := l.sess.NewReceiver(ctx, TopicToAddress(f.Filter), &amqp.ReceiverOptions{Credit: 500})
		cancel()
		if err != nil {
			b.Log.Info("receiver refused", "client", cl.ID, "filter", f.Filter, "error", err)
			continue
		}
		b.mu.Lock()
		b.subs[f.Filter] = r
		b.mu.Unlock()
		go b.receive(r, f.Filter, f.Qos)
	}
}

func (b *Bridge) receive(r *amqp.Receiver, topic string, qos byte) {
	for {
		m, err := r.Receive(context.Background(), nil)
		if err != nil {
			return
		}
		_ = b.Server.Publish(topic, m.GetData(), false, qos)
		_ = r.AcceptMessage(context.Background(), m)
	}
}

func (b *Bridge) OnDisconnect(cl *mqtt.Client, err error, expire bool) {
	b.mu.Lock()
	l := b.links[cl.ID]
	if l != nil && !cl.IsTakenOver() {
		delete(b.links, cl.ID)
	} else {
		l = nil
	}
	b.mu.Unlock()
	if l != nil {
		l.close()
	}
}

func (l *link) close() {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	_ = l.conn.Close()
}
