// Session records in the space's broker (docs/mqtt-design.md "Sessions
// that survive a gateway restart"): a persistent session's user, its
// subscriptions and its expiry are kept as one message per client id in the
// store the retained messages use (RetainStore: the durable,
// non-destructive last-value queue on the gateway's service connection),
// under the key "$session/<client id>" (no client can publish a topic
// starting with "$", and retained reads skip such keys). Written at
// SUBSCRIBE, UNSUBSCRIBE and DISCONNECT of a persistent session; an ended
// session (clean start, expiry, DISCONNECT with expiry 0) writes a
// tombstone (empty body); a record whose gateway died under its connected
// client ends from that gateway's last heartbeat, and sweeps remove expired
// records (session_sweep.go). Read at CONNECT with clean start 0 when the id
// has no session in this instance's memory (a restarted gateway), keyed (a
// selector on the key: the broker sends only that record and the
// gateways' heartbeats, not the whole queue): the record's
// subscriptions are installed in mochi and attached on the router with the
// client's own credentials before the CONNACK (session present 1). The
// password is never in a record.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// sessionKeyPrefix: the last-value key of a client id's record.
const sessionKeyPrefix = "$session/"

// recordVersion: the record's format; a record of another version is ignored.
const recordVersion = 1

// sessionRecord is what survives the gateway of a persistent session.
type sessionRecord struct {
	V            int         `json:"v"`
	User         string      `json:"user"`
	Expiry       uint32      `json:"expiry"`       // seconds after the disconnect
	Disconnected int64       `json:"disconnected"` // unix seconds; 0: connected when written
	Epoch        uint64      `json:"epoch"`        // incremented at each resume from the record
	Subs         []recordSub `json:"subs"`
	// Seen: unix seconds of the write; Owner: the writing gateway process
	// (its heartbeat key, session_sweep.go). Absent in records of earlier
	// gateways (read as 0 and ""); the version stays 1 (they read these).
	Seen  int64  `json:"seen,omitempty"`
	Owner string `json:"owner,omitempty"`
	// Qos2: the client's QoS 2 packet ids the router accepted and the
	// client has not released (PUBREL) yet; a resend of one after a restart
	// is acknowledged again, not forwarded again (qos2.go).
	Qos2 []uint16 `json:"qos2,omitempty"`
}

type recordSub struct {
	Filter string `json:"filter"`
	Qos    byte   `json:"qos"`
	NoLoc  bool   `json:"no_local,omitempty"`
	RAP    bool   `json:"retain_as_published,omitempty"`
	RH     byte   `json:"retain_handling,omitempty"`
}

func encodeRecord(r *sessionRecord) []byte {
	r.V = recordVersion
	out, _ := json.Marshal(r) // plain fields: cannot fail
	return out
}

// decodeRecord: nil for a tombstone (empty body).
func decodeRecord(body []byte) (*sessionRecord, error) {
	if len(body) == 0 {
		return nil, nil
	}
	var r sessionRecord
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("session record: %v", err)
	}
	if r.V != recordVersion {
		return nil, fmt.Errorf("session record: version %d, not %d", r.V, recordVersion)
	}
	return &r, nil
}

// deadline: the unix second after which the record's session has ended,
// 0 when not known. Disconnected: its disconnect time plus the expiry.
// Written while connected: the client was last known connected when its
// owner was last known alive, the later of the record's write (Seen) and
// the owner's heartbeat in hb (instance id -> unix seconds); the owner may
// have lived up to livenessGrace after that. A record with neither (an
// earlier gateway's) counts from noticed (the time a sweep first saw it;
// 0: not known, never ends).
func (r *sessionRecord) deadline(hb map[string]int64, noticed int64) int64 {
	if r.Disconnected > 0 {
		return r.Disconnected + int64(r.Expiry)
	}
	last := r.Seen
	if h := hb[r.Owner]; r.Owner != "" && h > last {
		last = h
	}
	if last == 0 {
		last = noticed
	}
	if last == 0 {
		return 0
	}
	return last + int64(livenessGrace/time.Second) + int64(r.Expiry)
}

// expired: the record's session ended by its expiry at now (unix seconds).
func (r *sessionRecord) expired(now int64, hb map[string]int64, noticed int64) bool {
	d := r.deadline(hb, noticed)
	return d > 0 && d < now
}

// PutSession writes the client id's record (nil: a tombstone) and returns
// once the broker accepted it.
func (s *RetainStore) PutSession(id string, r *sessionRecord) error {
	return s.putRecord(id, r, nil)
}

// putRecord is PutSession with more application properties: mqtt_takeover
// (a write at a restore, or a clean start's tombstone) or mqtt_new (the
// first write of a session's record), which the other instances' takeover
// watchers receive (takeover.go).
func (s *RetainStore) putRecord(id string, r *sessionRecord, extra map[string]any) error {
	var body []byte
	if r != nil {
		body = encodeRecord(r)
	}
	props := map[string]any{RetainKey: sessionKeyPrefix + id}
	for k, v := range extra {
		props[k] = v
	}
	return s.putMessage(body, props)
}

// putKey writes body (empty: a tombstone) as key's last value, durable,
// and returns once the broker accepted it.
func (s *RetainStore) putKey(key string, body []byte) error {
	return s.putMessage(body, map[string]any{RetainKey: key})
}

// putMessage: body with the application properties props (the key's among
// them), durable, once the broker accepted it.
func (s *RetainStore) putMessage(body []byte, props map[string]any) error {
	m := amqp.NewMessage(body)
	m.Header = &amqp.MessageHeader{Durable: true}
	m.ApplicationProperties = props
	return s.send(m)
}

// sessionSelector: the broker's selector of the client id's record and of
// the gateways' heartbeats (a string literal's quote doubled).
func sessionSelector(id string) string {
	key := strings.ReplaceAll(sessionKeyPrefix+id, "'", "''")
	return fmt.Sprintf("%s = '%s' OR %s LIKE '%s%%'", RetainKey, key, RetainKey, instanceKeyPrefix)
}

// Session reads the client id's record (nil when there is none, or a
// tombstone) and the gateways' heartbeats: the broker selects them (a
// selector on the key), the other records and retained messages stay in
// the broker; and the epoch a clean start's tombstone names (0: none).
func (s *RetainStore) Session(id string) (*sessionRecord, map[string]int64, uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	msgs, err := s.readSelected(ctx, sessionSelector(id))
	if err != nil {
		return nil, nil, 0, err
	}
	var last Retained
	for _, m := range msgs {
		if m.Topic == sessionKeyPrefix+id {
			last = m // the last one wins
		}
	}
	r, err := decodeRecord(last.Payload)
	tomb, _ := epochProp(last.props) // a clean start's tombstone names its epoch (takeover.go)
	return r, heartbeats(msgs), tomb, err
}

// recordOf: the record of cl's session as mochi holds it now.
func (b *Bridge) recordOf(cl *mqtt.Client, l *link, disconnected int64) *sessionRecord {
	r := &sessionRecord{User: l.user, Expiry: b.expiryOf(cl), Disconnected: disconnected, Epoch: l.epoch,
		Seen: time.Now().Unix(), Owner: b.instance, Qos2: l.in.accepted()}
	for _, s := range cl.State.Subscriptions.GetAll() {
		r.Subs = append(r.Subs, recordSub{Filter: s.Filter, Qos: s.Qos, NoLoc: s.NoLocal, RAP: s.RetainAsPublished,
			RH: s.RetainHandling})
	}
	return r
}

// expiryOf: mochi's session expiry of cl (clearExpiredClients' rule).
func (b *Bridge) expiryOf(cl *mqtt.Client) uint32 {
	if cl.Properties.ProtocolVersion == 5 && cl.Properties.Props.SessionExpiryIntervalFlag {
		return cl.Properties.Props.SessionExpiryInterval
	}
	return uint32(*b.Config.MaxSessionExpiry)
}

// saveSession writes cl's record when its session persists; a failure is
// logged (the session lives on in this instance). A session's writes are
// made one at a time, each of the state when it is made (l.wmu): the last
// one in the queue is the latest state.
func (b *Bridge) saveSession(cl *mqtt.Client, l *link, disconnected int64) {
	b.writeSession(cl, l, disconnected, false)
}

// writeSession is saveSession; takeover marks the write of a restore (the
// other instances let the session go, takeover.go).
func (b *Bridge) writeSession(cl *mqtt.Client, l *link, disconnected int64, takeover bool) {
	if b.Store == nil || expires(cl) {
		return
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	first := !l.stored.Swap(true) // before the write: a failed one may have reached the broker
	b.know(cl.ID, l.epoch, "")
	var extra map[string]any
	switch {
	case takeover:
		extra = map[string]any{takeoverKey: true}
	case first:
		extra = map[string]any{newKey: true} // the other instances index the id (takeover.go)
	}
	if err := b.Store.putRecord(cl.ID, b.recordOf(cl, l, disconnected), extra); err != nil {
		b.Log.Info("session record not written", "client", cl.ID, "error", err)
	}
}

// endSession removes the record of l's session when it had one, or of
// the id when one is indexed that is not another instance's live write
// (another instance holds that session: its record stays).
func (b *Bridge) endSession(id string, l *link) {
	if e, known := b.lookup(id); (known && e.owner == "") || l.stored.Load() {
		b.dropSession(id)
	}
}

// dropSession writes the tombstone of the client id's record. A tombstone
// stays in the queue as the key's last value (as a cleared retained topic
// does), so it is written only for ids that had a record: a clean client's
// CONNECT writes none.
func (b *Bridge) dropSession(id string) {
	b.removeRecord(id, nil)
}

// removeRecord writes the client id's tombstone with the application
// properties extra and unindexes the id; a failure is logged.
func (b *Bridge) removeRecord(id string, extra map[string]any) {
	if b.Store == nil {
		return
	}
	if err := b.Store.putRecord(id, nil, extra); err != nil {
		b.Log.Info("session record not removed", "client", id, "error", err)
		return
	}
	b.records.Delete(id)
}

// cleanStart writes the tombstone of the record of an id a CONNECT with
// clean start 1 gets a new session of, as dropSession does, flagged as a
// takeover and naming this instance and the new session's epoch (above the
// highest this instance knows of the id): an instance that holds the id's
// session, its client connected or not, lets it go (takeover.go), as a
// clean start within one instance ends the session and disconnects its
// client (0x8E).
func (b *Bridge) cleanStart(id string, epoch uint64) {
	b.removeRecord(id, map[string]any{takeoverKey: true, ownerKey: b.instance, epochKey: int64(epoch)})
}

// indexed is what b.records keeps of a client id with a record: the
// highest epoch known, and the instance whose write of it the takeover
// watcher saw ("": this instance's own write, or a sweep's read).
type indexed struct {
	epoch uint64
	owner string
}

// know indexes the client id as having a record of epoch, written by owner
// (see indexed); the highest epoch known stays (a clean start writes one
// above it).
func (b *Bridge) know(id string, epoch uint64, owner string) {
	e := indexed{epoch, owner}
	for {
		v, loaded := b.records.LoadOrStore(id, e)
		if !loaded {
			return
		}
		// an equal epoch: "" (a sweep's read, this instance's own write)
		// does not replace another instance's write the watcher saw
		if have, _ := v.(indexed); have.epoch > epoch || (have.epoch == epoch && (have.owner == owner || owner == "")) ||
			b.records.CompareAndSwap(id, v, e) {
			return
		}
	}
}

// lookup: the index's entry of the client id.
func (b *Bridge) lookup(id string) (indexed, bool) {
	v, ok := b.records.Load(id)
	if !ok {
		return indexed{}, false
	}
	e, _ := v.(indexed)
	return e, true
}

// storedSession: at a CONNECT with clean start 0 whose id has no session in
// this instance, the record in the store (nil: none, expired, or no store).
// errOtherUser when it is another user's. floor: a session started here
// begins at this epoch, above that of a clean start's tombstone of the id
// (whose takeover may reach an instance after its client came back there).
func (b *Bridge) storedSession(cl *mqtt.Client, clean bool, user string) (r *sessionRecord, floor uint64,
	err error) {
	if b.Store == nil || clean {
		return nil, 0, nil
	}
	b.mu.Lock()
	_, known := b.sessions[cl.ID]
	b.mu.Unlock()
	if known {
		return nil, 0, nil
	}
	r, hb, tomb, err := b.Store.Session(cl.ID)
	if err != nil {
		b.Log.Info("session record not read: a new session", "client", cl.ID, "error", err)
		return nil, 0, nil
	}
	if r == nil {
		return nil, tomb + 1, nil
	}
	if r.User != user {
		return nil, 0, errOtherUser
	}
	if now := time.Now().Unix(); r.expired(now, hb, now) {
		b.Log.Info("session record expired: a new session", "client", cl.ID)
		b.dropSession(cl.ID)
		return nil, r.Epoch + 1, nil
	}
	return r, 0, nil
}

// restore installs a record's subscriptions for cl (mochi's own
// inheritClientSession does the same for a session in its memory) and
// attaches their receivers on the client's link l, with its credentials:
// the router's recv decides again. The receivers start delivering after
// the CONNACK (l.owner is set by OnSessionEstablished).
func (b *Bridge) restore(cl *mqtt.Client, l *link, r *sessionRecord) {
	l.dmu.Lock()
	l.owner = nil
	l.dmu.Unlock()
	l.stored.Store(true)
	l.in.restore(r.Qos2)
	t := b.table.Load()
	n := 0
	for _, rs := range r.Subs {
		s := packets.Subscription{Filter: rs.Filter, Qos: rs.Qos, NoLocal: rs.NoLoc, RetainAsPublished: rs.RAP,
			RetainHandling: rs.RH}
		subs := b.attach(cl, l, t.Expand(s.Filter))
		if len(subs) == 0 {
			b.Log.Info("stored subscription not restored: no recv permission or no address", "client", cl.ID,
				"filter", s.Filter)
			continue
		}
		l.mu.Lock()
		l.subs[s.Filter] = subs
		l.mu.Unlock()
		b.Server.Topics.Subscribe(cl.ID, s)
		cl.State.Subscriptions.Add(s.Filter, s)
		b.deliverFrom(cl, l, s, subs, s.Qos)
		n++
	}
	b.Log.Info("session restored from the store", "client", cl.ID, "user", l.user, "subscriptions", n,
		"epoch", l.epoch, "qos2_ids", len(r.Qos2))
}

// openStored is openSession with the store: a record found for an id this
// instance does not hold is restored on the fresh link (session present);
// a clean start removes the id's record.
func (b *Bridge) openStored(cl *mqtt.Client, clean bool, fresh *link, cs *connState) (*link, bool, takeover, error) {
	r, floor, err := b.storedSession(cl, clean || *b.Config.MaxSessionExpiry == 0, fresh.user)
	if err != nil {
		return nil, false, takeover{}, err
	}
	// the epoch before the link is in b.sessions: the takeover watcher reads it there (takeover.go)
	e, known := b.lookup(cl.ID) // once: the watcher may index the id meanwhile
	switch {
	case r != nil:
		fresh.epoch = r.Epoch + 1
	case clean && known:
		fresh.epoch = e.epoch + 1 // above the session another instance may hold
	default:
		fresh.epoch = floor // above a clean start's tombstone of the id
	}
	l, resumed, t, err := b.openSession(cl, clean, fresh, cs)
	if err != nil || resumed {
		return l, resumed, t, err
	}
	if clean && known {
		b.cleanStart(cl.ID, l.epoch)
	}
	if r == nil {
		return l, false, t, nil
	}
	b.restore(cl, l, r)
	if !expires(cl) {
		b.writeSession(cl, l, 0, true) // the new epoch; another instance holding it lets go
	}
	return l, true, t, nil
}
