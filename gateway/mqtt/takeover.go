// Live takeover across instances (docs/mqtt-design.md "Takeover across
// instances: what is built"). A CONNECT to instance B of a persistent
// session that instance A holds in memory restores it on B from its record
// (session_store.go). A must then let go of it, as mochi does within one
// instance: a connected client on A is disconnected (MQTT 5 0x8E), and A's
// receivers of the session are closed (their unsettled deliveries go back
// to the router), so A takes no share of the session's messages any more.
//
// The record is the one truth: B's write of the record at the restore
// (the new epoch, B as its owner) carries the application property
// mqtt_takeover = true. Every instance keeps one receiver on the retained
// queue with the selector takeoverSelector (non-destructive: it gets
// each such write as it is made; the records already there at its attach
// are read first and not acted on). An instance holding the client id,
// not the record's owner, lets the session go when the record's epoch is
// later (takenFrom: on equal epochs the greater instance id keeps it). A
// record that is stale by the time it arrives changes nothing: a later
// takeover by A wrote a record with a higher epoch, and the queue keeps
// the last value per client id. No message is written for this but the
// record B writes anyway; each instance holds one more AMQP connection.
// The watcher also gets the first write of each session's record (flagged
// mqtt_new), to index the id (below); it lets nothing go for those.
//
// A CONNECT with clean start 1 to B of an id with a record (B's index of
// ids, which this watcher keeps with the first write of each session's
// record, flagged mqtt_new) writes the record's tombstone flagged as a
// takeover, naming B and the new session's epoch (above the highest B
// knows) in application properties: A lets its session go the same way.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	// takeoverKey: the application property of a record written at a restore
	// and of a clean start's tombstone (with ownerKey and epochKey: a
	// tombstone has no body to name them).
	takeoverKey = "mqtt_takeover"
	ownerKey    = "mqtt_owner"
	epochKey    = "mqtt_epoch"
	// newKey: the first write of a session's record; the other instances
	// index the id (a clean start of it there removes the record and takes
	// the session) and let nothing go.
	newKey           = "mqtt_new"
	takeoverSelector = takeoverKey + " = TRUE OR " + newKey + " = TRUE"
	takeoverRetry    = 2 * time.Second // after the watcher's connection or link was lost
	takeoverCredit   = 100
)

// watchTakeovers starts the watcher when the gateway has a store.
func (b *Bridge) watchTakeovers() {
	if b.Store == nil {
		return
	}
	go func() {
		for {
			err := b.watch()
			b.Log.Info("session takeovers: service connection lost, dialled again", "error", err,
				"in", takeoverRetry)
			time.Sleep(takeoverRetry)
		}
	}()
}

// watch dials the service routers, attaches the receiver and hands every
// record write it gets to noteRecord, until the link or the connection
// fails. The records already there are indexed, not acted on.
func (b *Bridge) watch() error {
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	conn, sess, err := b.Store.dial(ctx, "mqtt-gateway-takeover")
	if err != nil {
		cancel()
		return err
	}
	defer func() { _ = conn.Close() }()
	// the records that are there before the receiver: written before this
	// attach, so possibly before a session this instance made since (a clean
	// start, a record not read): not acted on (the record of a takeover
	// made while the receiver was being attached comes to it, not here)
	before, err := b.Store.read(ctx, sess, takeoverSelector)
	if err != nil {
		cancel()
		return err
	}
	seen := map[string]string{}
	for _, m := range before {
		seen[m.Topic] = signature(m.Payload, m.props)
		if id, ok := strings.CutPrefix(m.Topic, sessionKeyPrefix); ok {
			b.index(id, m.Payload)
		}
	}
	r, err := sess.NewReceiver(ctx, b.Store.Address, &amqp.ReceiverOptions{Credit: takeoverCredit,
		Filters: []amqp.LinkFilter{amqp.NewSelectorFilter(takeoverSelector)}})
	cancel()
	if err != nil {
		return err
	}
	b.Log.Info("session takeovers: watching", "records", len(before))
	for {
		m, err := r.Receive(context.Background(), nil)
		if err != nil {
			return err
		}
		_ = r.AcceptMessage(context.Background(), m) // non-destructive: the broker keeps it
		key, _ := m.ApplicationProperties[RetainKey].(string)
		body := payload(m)
		if old, ok := seen[key]; ok && old == signature(body, m.ApplicationProperties) {
			delete(seen, key)
			continue
		}
		if id, ok := strings.CutPrefix(key, sessionKeyPrefix); ok {
			b.noteRecord(id, body, m.ApplicationProperties)
		}
	}
}

// signature tells the watcher's messages apart: the body, and for a clean
// start's tombstone (no body) the instance and epoch it names.
func signature(body []byte, props map[string]any) string {
	if len(body) > 0 {
		return string(body)
	}
	owner, _ := props[ownerKey].(string)
	epoch, _ := epochProp(props)
	return fmt.Sprintf("\x00%s\x00%d", owner, epoch)
}

// epochProp: the epoch a clean start's tombstone names (an AMQP long as
// written; another integer type as a broker may give it back).
func epochProp(props map[string]any) (uint64, bool) {
	switch v := props[epochKey].(type) {
	case int64:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int:
		return uint64(v), v >= 0
	case uint64:
		return v, true
	case uint32:
		return uint64(v), true
	}
	return 0, false
}

// noteRecord acts on a record write the watcher got (body: the record, or
// empty for a clean start's tombstone): another instance's record is
// indexed, its tombstone unindexed; a takeover lets this instance's
// session of the id go when it is the older one (letGo).
func (b *Bridge) noteRecord(id string, body []byte, props map[string]any) {
	taking, _ := props[takeoverKey].(bool)
	if len(body) == 0 {
		owner, _ := props[ownerKey].(string)
		epoch, ok := epochProp(props)
		if !taking || owner == "" || !ok || owner == b.instance {
			return
		}
		b.records.Delete(id)
		b.letGo(id, &sessionRecord{Owner: owner, Epoch: epoch})
		return
	}
	if rec := b.index(id, body); rec != nil && taking {
		b.letGo(id, rec)
	}
}

// index puts another instance's record (body) in the index of ids, with
// its epoch and owner; nil for this instance's own, a tombstone or a bad
// record.
func (b *Bridge) index(id string, body []byte) *sessionRecord {
	rec, err := decodeRecord(body)
	if err != nil || rec == nil || rec.Owner == "" || rec.Owner == b.instance {
		return nil
	}
	b.know(id, rec.Epoch, rec.Owner)
	return rec
}

// letGo ends this instance's hold on the client id's session when rec (a
// record written at a restore, or what a clean start's tombstone names) is
// another instance's, of a later epoch.
// The session leaves b.sessions first: the holder's OnDisconnect then
// neither writes the record (the new owner's now) nor removes it.
func (b *Bridge) letGo(id string, rec *sessionRecord) {
	b.mu.Lock()
	l := b.sessions[id]
	if l == nil || !takenFrom(b.instance, l.epoch, rec) {
		b.mu.Unlock()
		return
	}
	delete(b.sessions, id)
	holder, epoch := l.holder, l.epoch
	l.movedAway.Store(true) // a will of the holder's end is not scheduled (goneWithWill)
	b.mu.Unlock()
	b.delayed.cancel(id, l.user) // a delayed will of an earlier end: the client is back, elsewhere
	connected := holder != nil && !holder.Closed()
	b.Log.Info("session taken over by another instance", "client", id, "user", l.user, "epoch", epoch,
		"new_epoch", rec.Epoch, "connected", connected)
	// nothing more is routed to this instance for the session; its unsettled
	// deliveries go back to the router (a connected holder's link itself is
	// closed by its OnDisconnect, after its publishes' outcomes)
	l.mu.Lock()
	rs := l.takeSubs()
	l.mu.Unlock()
	closeAll(rs)
	if connected {
		_ = b.Server.DisconnectClient(holder, packets.ErrSessionTakenOver)
		go b.forget(holder, 2*b.Timeout)
		return
	}
	b.closeLink(l)
	b.forget(holder, 0)
}

// takenFrom: rec, a record written at a restore, takes the session of
// epoch from the instance self: another owner, a later epoch. Two
// instances restoring the same record at once write the same epoch: the
// greater instance id keeps the session, so that one holds it, not both.
func takenFrom(self string, epoch uint64, rec *sessionRecord) bool {
	return rec.Owner != self && (rec.Epoch > epoch || (rec.Epoch == epoch && rec.Owner > self))
}

// forget removes a taken-over client from mochi's memory (its offline
// session: subscriptions and in-flight messages) once its connection has
// ended (waiting at most wait), unless the id connected here again since.
func (b *Bridge) forget(cl *mqtt.Client, wait time.Duration) {
	if cl == nil {
		return
	}
	for end := time.Now().Add(wait); !cl.Closed() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	// under b.mu: a new CONNECT of the id here registers its session under
	// it (openSession) before mochi inherits the old client; then mochi's
	// copy is left to that connection
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, back := b.sessions[cl.ID]; back {
		return
	}
	if cur, ok := b.Server.Clients.Get(cl.ID); !ok || cur != cl {
		return
	}
	cl.ClearInflights()
	// mochi's UnsubscribeClient without its hooks: the bridge's
	// OnUnsubscribed would write this instance's record over the new owner's
	for filter := range cl.State.Subscriptions.GetAll() {
		cl.State.Subscriptions.Delete(filter)
		if b.Server.Topics.Unsubscribe(filter, cl.ID) {
			atomic.AddInt64(&b.Server.Info.Subscriptions, -1)
		}
	}
	b.Server.Clients.Delete(cl.ID)
}
