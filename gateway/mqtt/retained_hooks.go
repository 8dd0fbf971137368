package main

import (
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// retain stores a retained publish (an empty payload clears the topic)
// before it is forwarded, so a PUBACK means "stored and accepted". Called
// after the user's sender was attached: the user's send permission on the
// topic's address was checked by the router first.
func (b *Bridge) retain(cl *mqtt.Client, pk packets.Packet) error {
	if b.Store == nil {
		b.Log.Debug("retain flag forwarded, not kept: no service connection configured", "client", cl.ID, "topic", pk.TopicName)
		return nil
	}
	if err := b.Store.Put(pk.TopicName, pk.Payload, pk.FixedHeader.Qos); err != nil {
		b.Log.Info("retained message not stored", "client", cl.ID, "topic", pk.TopicName, "error", err)
		return err
	}
	b.Metrics.Retained()
	b.Log.Info("retained", "client", cl.ID, "topic", pk.TopicName, "cleared", len(pk.Payload) == 0)
	return nil
}

// startSubscription sends the retained messages of a granted filter first
// (MQTT 5 retain handling: 0 always, 1 only for a new subscription, 2
// never; 3.1.1: always), then starts delivering from its receivers. Only
// topics of addresses whose receiver the router let attach (recv) are sent.
func (b *Bridge) startSubscription(cl *mqtt.Client, l *link, f packets.Subscription, rs []*sub, granted byte,
	existed bool, sent <-chan struct{}) {
	select { // the SUBACK first, then retained and live messages
	case <-sent:
	case <-time.After(b.Timeout): // no SUBACK written (the client went away)
		b.forgetClient(cl)
	}
	if b.Store != nil && f.RetainHandling != 2 && !(f.RetainHandling == 1 && existed) {
		b.sendRetained(cl, l, f.Filter, rs, granted)
	} else {
		b.forgetReads(cl, f.Filter)
	}
	b.deliverFrom(cl, l, f, rs, granted)
}

// deliverFrom starts delivering from the receivers of subscription f at QoS
// granted (a granted SUBSCRIBE, or one restored from a session record).
func (b *Bridge) deliverFrom(cl *mqtt.Client, l *link, f packets.Subscription, rs []*sub, granted byte) {
	rap := cl.Properties.ProtocolVersion == 5 && f.RetainAsPublished
	for _, r := range rs {
		go b.receive(l, r.r, r.first, granted, rap)
	}
}

func (b *Bridge) sendRetained(cl *mqtt.Client, l *link, filter string, rs []*sub, granted byte) {
	allowed := map[string]bool{}
	for _, r := range rs {
		allowed[r.r.Address()] = true
	}
	ms, err := b.retainedOf(cl, filter)
	if err != nil {
		b.Log.Info("retained messages not read", "client", cl.ID, "filter", filter, "error", err)
		return
	}
	n := 0
	for _, m := range ms {
		if !allowed[m.Topic] {
			continue
		}
		q := m.Qos
		if q > granted {
			q = granted
		}
		out := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: q, Retain: true},
			TopicName: m.Topic, Payload: m.Payload, Created: time.Now().Unix()}
		if q > 0 {
			id, err := cl.NextPacketID()
			if err != nil {
				continue
			}
			out.PacketID = uint16(id)
			cl.State.Inflight.Set(out)
		}
		if err := cl.WritePacket(out); err != nil {
			b.Log.Info("retained message not delivered", "client", cl.ID, "topic", m.Topic, "error", err)
			return
		}
		b.Metrics.Delivered(q)
		n++
	}
	b.Log.Info("retained sent", "client", cl.ID, "filter", filter, "messages", n)

}

// retainFlag: the AMQP message's x-opt-mqtt-retain annotation.
func retainFlag(m *amqp.Message) bool {
	v, ok := m.Annotations[annotationRetain].(bool)
	return ok && v
}

// newRetainStore: nil when the configuration has no service connection.
func newRetainStore(c *Config, b *Bridge) *RetainStore {
	if c.RetainedAddress == "" {
		return nil
	}
	return &RetainStore{Routers: c.ServiceRouters, Address: c.RetainedAddress, User: c.ServiceUser,
		Password: c.servicePassword, TLS: b.TLS, Log: b.Log, Timeout: b.Timeout}
}

type readKey struct {
	cl     *mqtt.Client
	filter string
}

type readResult struct {
	ms  []Retained
	err error
}

// prefetchRetained starts reading the store for a filter at the ACL check,
// so that the read's idle window runs during the SUBACK's recv probe.
func (b *Bridge) prefetchRetained(cl *mqtt.Client, filter string) {
	if b.Store == nil {
		return
	}
	ch := make(chan readResult, 1)
	if old, loaded := b.reads.Swap(readKey{cl, filter}, ch); loaded {
		go func() { <-old.(chan readResult) }() // superseded
	}
	go func() {
		ms, err := b.Store.Match(filter)
		ch <- readResult{ms, err}
	}()
}

// retainedOf takes the read started at the ACL check, else reads now.
func (b *Bridge) retainedOf(cl *mqtt.Client, filter string) ([]Retained, error) {
	if v, ok := b.reads.LoadAndDelete(readKey{cl, filter}); ok {
		r := <-v.(chan readResult)
		return r.ms, r.err
	}
	return b.Store.Match(filter)
}

// forgetReads drops the reads of a filter that was not granted (or of a
// gone client); their results are discarded.
func (b *Bridge) forgetReads(cl *mqtt.Client, filter string) {
	b.reads.LoadAndDelete(readKey{cl, filter})
}

type subackKey struct {
	cl *mqtt.Client
	id uint16
}

// awaitSuback returns a channel closed when the SUBACK of the SUBSCRIBE
// packet id has been written (OnPacketSent).
func (b *Bridge) awaitSuback(cl *mqtt.Client, id uint16) <-chan struct{} {
	ch := make(chan struct{})
	b.subacks.Store(subackKey{cl, id}, ch)
	return ch
}

// OnPacketSent closes the channel of a written SUBACK.
func (b *Bridge) OnPacketSent(cl *mqtt.Client, pk packets.Packet, _ []byte) {
	if pk.FixedHeader.Type != packets.Suback {
		return
	}
	if v, ok := b.subacks.LoadAndDelete(subackKey{cl, pk.PacketID}); ok {
		close(v.(chan struct{}))
	}
}

// forgetClient drops the client's waiting SUBACK channels and reads.
func (b *Bridge) forgetClient(cl *mqtt.Client) {
	b.subacks.Range(func(k, _ any) bool {
		if k.(subackKey).cl == cl {
			b.subacks.Delete(k)
		}
		return true
	})
	b.reads.Range(func(k, _ any) bool {
		if k.(readKey).cl == cl {
			b.reads.Delete(k)
		}
		return true
	})
}
