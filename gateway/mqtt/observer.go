// The retained messages of AMQP clients (mapping.py RETAIN_FROM_AMQP_TYPES;
// docs/mqtt-design.md "Retained messages of AMQP clients"). An AMQP client
// of the space makes a message retained the way the gateway marks an MQTT
// one: the message annotation x-opt-mqtt-retain true, on a message to a
// multicast or topic address, where every receiver gets its own copy. Each
// gateway instance with a store receives from those addresses (the table's
// retain_from_amqp) on a service connection of its own and stores every
// marked message in the order it receives them; an empty body clears the
// topic. A message the gateway stored itself before it sent it carries
// x-opt-mqtt-stored and is not stored again. The router checked the
// client's send permission on the address; the service user's vhost lets it
// receive from the space's multicast and topic addresses only
// (mqtt_service.service_sources).
package main

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/go-amqp"
)

const (
	observeSync   = 5 * time.Second // the table's list read again (a SIGHUP's), refused links tried again
	observeRetry  = 2 * time.Second // after the service connection was lost
	observeCredit = 100
)

// observer is the receivers of one service connection (one goroutine, serve,
// owns running and refused).
type observer struct {
	b       *Bridge
	sess    *amqp.Session
	running map[string]context.CancelFunc // address -> its receiver's stop
	refused map[string]bool               // addresses whose receiver the router refused (logged once)
	ended   chan ended
}

type ended struct {
	address string
	err     error
}

// observeRetained starts the observer when the gateway has a store.
func (b *Bridge) observeRetained() {
	if b.Store == nil {
		return
	}
	o := &observer{b: b, refused: map[string]bool{}}
	go func() {
		for {
			err := o.serve()
			b.Log.Info("retained messages of AMQP clients: service connection lost, dialled again", "error", err,
				"in", observeRetry)
			time.Sleep(observeRetry)
		}
	}()
}

// serve dials the service routers and keeps a receiver on each listed
// address until the connection fails.
func (o *observer) serve() error {
	ctx, cancel := context.WithTimeout(context.Background(), o.b.Timeout)
	conn, sess, err := o.b.Store.dial(ctx, "mqtt-gateway-observer")
	cancel()
	if err != nil {
		return err
	}
	o.sess, o.running, o.ended = sess, map[string]context.CancelFunc{}, make(chan ended, 16)
	defer func() {
		for _, stop := range o.running {
			stop()
		}
		_ = conn.Close()
	}()
	t := time.NewTicker(observeSync)
	defer t.Stop()
	for {
		if err := o.sync(); err != nil {
			return err
		}
		select {
		case e := <-o.ended:
			delete(o.running, e.address)
			var le *amqp.LinkError
			if !errors.As(e.err, &le) {
				return e.err // the session or the connection
			}
			o.b.Log.Info("retained messages of AMQP clients: receiver detached, attached again later",
				"address", e.address, "error", e.err)
		case <-t.C:
		}
	}
}

// sync attaches a receiver to each listed address without one and stops
// those no longer listed.
func (o *observer) sync() error {
	want := map[string]bool{}
	for _, a := range o.b.table.Load().RetainFromAMQP {
		want[a] = true
	}
	for a, stop := range o.running {
		if !want[a] {
			stop()
			delete(o.running, a)
		}
	}
	for a := range want {
		if _, ok := o.running[a]; ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.b.Timeout)
		r, err := o.sess.NewReceiver(ctx, o.b.Config.Space+"/"+a, &amqp.ReceiverOptions{Credit: observeCredit})
		cancel()
		var le *amqp.LinkError
		if errors.As(err, &le) {
			if !o.refused[a] {
				o.b.Log.Info("retained messages of AMQP clients: receiver refused, tried again later",
					"address", a, "error", err)
			}
			o.refused[a] = true
			continue
		}
		if err != nil {
			return err
		}
		delete(o.refused, a)
		rctx, stop := context.WithCancel(context.Background())
		o.running[a] = stop
		go o.receive(rctx, a, r, o.ended)
	}
	return nil
}

// receive stores the address's marked messages in the order they come.
func (o *observer) receive(ctx context.Context, address string, r *amqp.Receiver, out chan<- ended) {
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = r.Close(cctx)
		cancel()
	}()
	for {
		m, err := r.Receive(ctx, nil)
		if err != nil {
			select { // serve reads it, or has stopped every receiver
			case out <- ended{address, err}:
			case <-ctx.Done():
			}
			return
		}
		o.store(address, m)
		_ = r.AcceptMessage(ctx, m) // a multicast message came settled: nothing to do
	}
}

// store puts a marked message of an AMQP client into the store (the topic
// is the address of the same name).
func (o *observer) store(topic string, m *amqp.Message) {
	if !fromAMQPRetained(m) {
		return
	}
	body := payload(m)
	if err := o.b.Store.Put(topic, body, qosOf(m, 2)); err != nil {
		o.b.Log.Info("retained message of an AMQP client not stored", "topic", topic, "error", err)
		return
	}
	o.b.Metrics.Retained()
	o.b.Log.Info("retained from AMQP", "topic", topic, "cleared", len(body) == 0)
}

// fromAMQPRetained: marked retained, and not stored already by a gateway.
func fromAMQPRetained(m *amqp.Message) bool {
	stored, _ := m.Annotations[annotationStored].(bool)
	return retainFlag(m) && !stored
}
