// The hooks that bridge every MQTT client of the embedded mochi-mqtt server
// to the router network of one standard space over AMQP 1.0 (go-amqp). A
// connection to the space's router listener is a user's (pool.go): it is
// authenticated with that user's name and password and carries, on its one
// session, the links of up to clients_per_amqp_connection MQTT clients of
// that user, so the router (address authz from the auth service) decides
// what each may send and receive, as it did with a connection per client.
// Every CONNECT logs in through the router (a login connection when the
// user's shared connection has room). A shared connection that dies
// disconnects every client on it (they reconnect). docs/mqtt-design.md
// ("Connections to the router") and README.md describe the behaviour.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	annotationQos    = "x-opt-mqtt-qos"
	annotationRetain = "x-opt-mqtt-retain"
	// a will's MQTT 5 will delay in seconds (mapping.py ANNOTATION_WILL_DELAY)
	annotationWillDelay = "x-opt-mqtt-will-delay"
	// on a retained message the gateway stored before it sent it (mapping.py
	// ANNOTATION_STORED): the gateways' observers do not store it again
	annotationStored = "x-opt-mqtt-stored"
)

// pending is one QoS 1 / 2 publish waiting for the router's disposition
// (dup: a QoS 2 resend waiting for the first one's outcome, e).
type pending struct {
	receipt amqp.SendReceipt
	id      uint16
	qos     byte
	e       *inbound
	dup     bool
}

// delivery is one QoS 1 message from AMQP waiting for the client's PUBACK.
type delivery struct {
	r *amqp.Receiver
	m *amqp.Message
}

// link is the AMQP side of one MQTT session (session.go): of one
// connection, or of several in turn when the session persists.
type link struct {
	user       string
	password   string // kept for a will's redial (will.go)
	client     string
	resumable  bool          // a later CONNECT with clean start 0 resumes it
	dmu        sync.RWMutex  // deliveries (read) against a takeover (write)
	owner      *mqtt.Client  // the connection deliveries go to (dmu); nil during a takeover
	holder     *mqtt.Client  // the connection that holds the session (b.mu)
	in         *qos2In       // QoS 2 packet ids not yet released (qos2.go)
	epoch      uint64        // of its stored record (session_store.go)
	stored     atomic.Bool   // a record of it was written or restored: its end removes it
	wmu        sync.Mutex    // one write of its record at a time (session_store.go)
	cs         *connState    // the session's latest connection (b.mu)
	sc         *shared       // the user's shared router connection it is on (pool.go)
	sess       *amqp.Session // sc's session
	closed     atomic.Bool   // closeLink ran
	movedAway  atomic.Bool   // another instance took the session over (takeover.go): no delayed will here
	mu         sync.Mutex
	senders    map[string]*amqp.Sender
	staged     map[string][]*sub // filter -> receivers attached by the ACL check
	subs       map[string][]*sub // filter -> receivers of a granted subscription
	deliveries map[uint16]delivery
	pubQos     atomic.Uint32 // QoS of the publish being read (metrics of an ACL refusal)
	ctx        context.Context
	cancel     context.CancelFunc
}

// Bridge is the mochi hook.
type Bridge struct {
	mqtt.HookBase
	Config   *Config
	TLS      *tls.Config // to the routers; nil: plain AMQP
	Log      *slog.Logger
	Server   *mqtt.Server
	Timeout  time.Duration
	table    atomic.Pointer[Table]
	mu       sync.Mutex
	links    map[*mqtt.Client]*link
	conns    map[*mqtt.Client]*connState
	sessions map[string]*link // client id -> its session's link (session.go)
	users    map[string]int64
	Store    *RetainStore     // nil: retained messages are forwarded, not kept
	Metrics  *Metrics         // nil: no metrics endpoint
	reads    sync.Map         // readKey -> chan readResult: retained reads started at the ACL check
	subacks  sync.Map         // subackKey -> chan struct{}: closed when that SUBACK was written
	records  sync.Map         // client id -> indexed: ids with a session record in the store (session_store.go)
	instance string           // this process's id in its records and heartbeat (session_sweep.go)
	noticed  map[string]int64 // client id -> when a sweep first saw its record without liveness (session_sweep.go)
	delayed  delayedWills     // MQTT 5 wills waiting for their delay (will.go)
	Journal  *Journal         // nil: no state_dir, wills do not survive the process (journal.go)
	pool     pool             // the users' shared router connections (pool.go)
}

func NewBridge(c *Config, t *Table, tlsc *tls.Config, log *slog.Logger) *Bridge {
	b := &Bridge{Config: c, TLS: tlsc, Log: log, Timeout: 10 * time.Second,
		links: map[*mqtt.Client]*link{}, conns: map[*mqtt.Client]*connState{}, sessions: map[string]*link{}, users: map[string]int64{},
		instance: newInstanceID(), noticed: map[string]int64{}}
	b.table.Store(t)
	return b
}

func (b *Bridge) SetTable(t *Table) { b.table.Store(t) }

// Clients: the number of connected clients (with their router connection).
func (b *Bridge) Clients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.links)
}

func (b *Bridge) ID() string { return "enmasse-amqp-bridge" }

func (b *Bridge) Provides(e byte) bool {
	switch e {
	case mqtt.OnConnect, mqtt.OnConnectAuthenticate, mqtt.OnACLCheck, mqtt.OnPublish, mqtt.OnDisconnect,
		mqtt.OnSubscribed, mqtt.OnUnsubscribed, mqtt.OnQosComplete, mqtt.OnPacketRead, mqtt.OnPacketSent,
		mqtt.OnSessionEstablished, mqtt.OnClientExpired, mqtt.OnPacketEncode:
		return true
	}
	return false
}

func (b *Bridge) linkOf(cl *mqtt.Client) *link {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.links[cl]
}

func (b *Bridge) connOf(cl *mqtt.Client) *connState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns[cl]
}

// connack writes a refusing CONNACK: v5 the reason code, 3.1.1 its return code.
func connack(cl *mqtt.Client, v5 packets.Code, v3 byte) error {
	code := v5.Code
	if cl.Properties.ProtocolVersion < 5 {
		code = v3
	}
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connack}, ReasonCode: code}
	if cl.Properties.ProtocolVersion == 5 {
		pk.Properties.ReasonString = v5.Reason
	}
	_ = cl.WritePacket(pk)
	return v5
}

// OnConnect authenticates the client through the router (its SASL PLAIN
// relayed to the auth service) and applies the per-user connection limit.
// A refusal writes its own CONNACK and returns an error: mochi then closes
// the connection without a CONNACK of its own.
func (b *Bridge) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	user := string(pk.Connect.Username)
	// the will is the bridge's (will.go), taken from mochi after the login;
	// sessions persist (session.go) unless max_session_expiry is 0
	will := cl.Properties.Will
	cl.Properties.Will = mqtt.Will{}
	if *b.Config.MaxSessionExpiry == 0 {
		cl.Properties.Clean = true
		cl.Properties.Props.SessionExpiryInterval = 0
	}
	max := *b.Config.MaxConnectionsPerUser
	b.mu.Lock()
	if max > 0 && b.users[user] >= max {
		b.mu.Unlock()
		b.Log.Info("connect refused: connections per user", "client", cl.ID, "user", user, "remote", cl.Net.Remote, "max", max)
		b.Metrics.Connection(connQuotaExceeded)
		return connack(cl, packets.ErrQuotaExceeded, packets.Err3ServerUnavailable.Code)
	}
	b.users[user]++ // reserved while the router answers
	b.mu.Unlock()
	started := time.Now()
	l, code, v3, err := b.dial(cl, user, string(pk.Connect.Password))
	dialled := time.Since(started)
	if err != nil {
		b.release(user)
		b.Log.Info("connect refused", "client", cl.ID, "user", user, "remote", cl.Net.Remote,
			"reason", fmt.Sprintf("0x%02x", code.Code), "error", err)
		b.Metrics.ConnectionRefused(code)
		return connack(cl, code, v3)
	}
	cl.Properties.Will = will
	w, err := b.registerWill(cl, l)
	if err != nil {
		b.closeLink(l)
		b.release(user)
		code, v3, outcome := packets.ErrNotAuthorized, packets.Err3NotAuthorized.Code, connNotAuthorized
		if !notAuthorized(err) {
			code, v3, outcome = packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code, connServerUnavailable
		}
		b.Log.Info("connect refused: will", "client", cl.ID, "user", user, "remote", cl.Net.Remote,
			"topic", will.TopicName, "reason", fmt.Sprintf("0x%02x", code.Code), "error", err)
		b.Metrics.Connection(outcome)
		return connack(cl, code, v3)
	}
	if w != nil && b.Journal != nil {
		// durable before the CONNACK: a will the client was told about survives a crash
		if err := b.Journal.Write(w); err != nil {
			b.closeLink(l)
			b.release(user)
			b.Log.Error("connect refused: will not journaled", "client", cl.ID, "user", user, "error", err)
			b.Metrics.Connection(connServerUnavailable)
			return connack(cl, packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code)
		}
	}
	cs := newConnState(int(*b.Config.ReceiveMaximum))
	cs.will = w
	fresh := l
	var t takeover
	l, cs.resumed, t, err = b.openStored(cl, pk.Connect.Clean, fresh, cs)
	if err != nil {
		b.Journal.Remove(w)
		b.closeLink(fresh)
		b.release(user)
		b.Log.Info("connect refused: client id in use by another user", "client", cl.ID, "user", user, "remote", cl.Net.Remote)
		b.Metrics.Connection(connNotAuthorized)
		return connack(cl, packets.ErrClientIdentifierNotValid, packets.Err3ClientIdentifierNotValid.Code)
	}
	if cs.resumed && l != fresh { // (l == fresh: restored from the store, session_store.go)
		b.closeLink(fresh) // it authenticated the client; the session's own link serves it
		t.run(b)
		b.Log.Info("session resumed", "client", cl.ID, "user", user, "subscriptions", len(l.subs), "qos2_ids", l.in.len())
	}
	if w != nil {
		b.Log.Info("will registered", "client", cl.ID, "address", w.address, "qos", w.pk.FixedHeader.Qos,
			"retain", w.pk.FixedHeader.Retain, "delay", w.delay)
	}
	if n := b.register(cl, l, cs); n > 0 {
		b.Log.Info("delayed will cancelled: the client reconnected", "client", cl.ID, "wills", n)
	}
	// ackLoop starts at the first QoS 1 / 2 publish (flow.go enqueue): an idle client has none
	b.Metrics.Connection(connAccepted)
	b.Log.Info("connected", "client", cl.ID, "user", user, "remote", cl.Net.Remote, "listener", cl.Net.Listener,
		"version", cl.Properties.ProtocolVersion, "router_login_ms", dialled.Milliseconds(),
		"connect_ms", time.Since(started).Milliseconds())
	return nil
}

func (b *Bridge) release(user string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.users[user]--; b.users[user] <= 0 {
		delete(b.users, user)
	}
}

// classify maps an AMQP connection failure to the CONNACK codes.
func classify(err error) (packets.Code, byte, bool) {
	var ce *amqp.ConnError
	if errors.As(err, &ce) && ce.RemoteErr != nil {
		switch ce.RemoteErr.Condition {
		case amqp.ErrCondUnauthorizedAccess:
			return packets.ErrNotAuthorized, packets.Err3NotAuthorized.Code, true
		case amqp.ErrCondResourceLimitExceeded:
			return packets.ErrQuotaExceeded, packets.Err3ServerUnavailable.Code, true
		}
	}
	if strings.Contains(err.Error(), "SASL") && strings.Contains(err.Error(), "auth failed") {
		return packets.ErrBadUsernameOrPassword, packets.ErrMalformedUsernameOrPassword.Code, true
	}
	if strings.Contains(err.Error(), "no supported auth mechanism") { // no user name: the router wants PLAIN
		return packets.ErrNotAuthorized, packets.Err3NotAuthorized.Code, true
	}
	return packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code, false
}

// dial logs the client in through the router and gives it a link of its
// own on a shared connection of its user (pool.go).
func (b *Bridge) dial(cl *mqtt.Client, user, password string) (*link, packets.Code, byte, error) {
	sc, code, v3, err := b.acquire(cl, user, password)
	if err != nil {
		return nil, code, v3, err
	}
	lctx, lcancel := context.WithCancel(context.Background())
	l := &link{user: user, password: password, sc: sc, sess: sc.sess, senders: map[string]*amqp.Sender{},
		staged: map[string][]*sub{}, subs: map[string][]*sub{}, in: newQos2In(int(*b.Config.ReceiveMaximum)),
		deliveries: map[uint16]delivery{}, ctx: lctx, cancel: lcancel}
	if !b.pool.hold(sc, l) {
		b.closeLink(l)
		return nil, packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code,
			errors.New("the router connection was lost during the login")
	}
	return l, code, v3, nil
}

// OnConnectAuthenticate: OnConnect did the work.
func (b *Bridge) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	return b.linkOf(cl) != nil
}

// OnPacketRead: the QoS 2 acknowledgements are the bridge's (qos2.go): a
// PUBREL releases the packet id and is answered here (PUBCOMP; MQTT 5 0x92
// for an id not remembered), a PUBREC of a delivery settles its AMQP
// message; mochi then sees a no-op in their place (a PUBACK of packet id 0,
// never in use), so its in-flight store, shared by both directions, is not
// touched for an id the other direction uses. mochi drops a publish to
// $SYS/... without an answer: it is refused as any topic outside the table
// (MQTT 5 PUBACK / PUBREC 0x87, 3.1.1 the connection closed).
func (b *Bridge) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	v5 := cl.Properties.ProtocolVersion == 5
	switch pk.FixedHeader.Type {
	case packets.Disconnect:
		if v5 && pk.FixedHeader.Remaining == 1 && pk.ReasonCode == 0 { // disconnect.go
			if code, ok := shortDisconnectReason(cl.Net.Conn); ok {
				pk.ReasonCode = code
			}
		}
		return pk, nil
	case packets.Pubrel:
		return b.pubrel(cl, pk), nil
	case packets.Pubrec:
		b.pubrec(cl, pk)
		return pk, nil
	case packets.Publish:
	default:
		return pk, nil
	}
	if !mqtt.IsValidFilter(pk.TopicName, true) { // mochi drops it before the ACL check
		b.Metrics.Publish(pk.FixedHeader.Qos, pubRefused)
	} else if l := b.linkOf(cl); l != nil {
		l.pubQos.Store(uint32(pk.FixedHeader.Qos)) // read by OnACLCheck (same goroutine, next)
	}
	if pk.FixedHeader.Qos > 0 {
		if cs := b.connOf(cl); cs != nil {
			// mochi deletes an in-flight message of this id (a delivery to the
			// client) before OnPublish; OnPublish puts it back (flow.go)
			cs.stash, cs.stashed = cl.State.Inflight.Get(pk.PacketID)
		}
	}
	if pk.FixedHeader.Qos > 0 && !mqtt.IsValidFilter(pk.TopicName, true) {
		b.Log.Info("publish refused: reserved topic", "client", cl.ID, "topic", pk.TopicName)
		if !v5 {
			cl.Stop(packets.ErrNotAuthorized)
			return pk, packets.ErrRejectPacket
		}
		_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: ackType(pk.FixedHeader.Qos)},
			PacketID: pk.PacketID, ReasonCode: packets.ErrNotAuthorized.Code})
	}
	return pk, nil
}

// noop is what mochi processes in place of a packet the bridge answered.
var noop = packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Puback}}

func ackType(qos byte) byte {
	if qos == 2 {
		return packets.Pubrec
	}
	return packets.Puback
}

// pubrel: the client's PUBREL ends a QoS 2 publish: PUBCOMP, after the
// session's record (when it persists) no longer names the id: the client
// may use the id again once it has the PUBCOMP.
func (b *Bridge) pubrel(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	code := packets.CodeSuccess.Code
	if l := b.linkOf(cl); l == nil || !l.in.release(pk.PacketID) {
		code = packets.ErrPacketIdentifierNotFound.Code
	} else {
		b.saveSession(cl, l, 0)
	}
	_ = cl.WritePacket(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Pubcomp},
		PacketID: pk.PacketID, ReasonCode: code})
	return noop
}

// pubrec: a QoS 2 delivery reached the client: its AMQP message is accepted
// now (not at PUBCOMP: the client has it and drops a resend of it; waiting
// for the PUBCOMP would let a connection lost in between redeliver it).
// An MQTT 5 PUBREC with a failure code rejects it. mochi goes on with the
// PUBREL.
func (b *Bridge) pubrec(cl *mqtt.Client, pk packets.Packet) {
	l := b.linkOf(cl)
	if l == nil {
		return
	}
	if out, ok := cl.State.Inflight.Get(pk.PacketID); !ok || out.FixedHeader.Type != packets.Publish {
		return
	}
	l.mu.Lock()
	d, ok := l.deliveries[pk.PacketID]
	delete(l.deliveries, pk.PacketID)
	l.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, b.Timeout)
	defer cancel()
	if pk.ReasonCode >= packets.ErrUnspecifiedError.Code {
		_ = d.r.RejectMessage(ctx, d.m, nil)
		return
	}
	_ = d.r.AcceptMessage(ctx, d.m)
}

// OnACLCheck: publish -> the topic must be an address of the table;
// subscribe -> the filter's addresses (the table's, expanded with mochi's
// matching) are attached on the client's own connection now, so the
// router's recv permission decides the SUBACK; at least one must attach.
func (b *Bridge) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	t := b.table.Load()
	if write {
		if t.Address(topic) == "" { // the first half of sendable (will.go); OnPublish does all of it
			b.Log.Info("publish refused: not an address of the space", "client", cl.ID, "topic", topic)
			if l := b.linkOf(cl); l != nil {
				b.Metrics.Publish(byte(l.pubQos.Load()), pubRefused)
			}
			return false
		}
		return true
	}
	l := b.linkOf(cl)
	addresses := t.Expand(topic)
	if l == nil || len(addresses) == 0 {
		b.Log.Info("subscribe refused: no address of the space matches", "client", cl.ID, "filter", topic)
		b.Metrics.Subscription(false)
		return false
	}
	b.prefetchRetained(cl, topic) // read in parallel with the probe (retained_hooks.go)
	rs := b.attach(cl, l, addresses)
	if len(rs) == 0 {
		b.Log.Info("subscribe refused: no recv permission", "client", cl.ID, "user", l.user, "filter", topic)
		b.Metrics.Subscription(false)
		return false
	}
	l.mu.Lock()
	closeAll(l.staged[topic])
	l.staged[topic] = rs
	l.mu.Unlock()
	return true
}

func closeAll(rs []*sub) {
	for _, r := range rs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = r.r.Close(ctx)
		cancel()
	}
}

// OnSubscribed starts delivering from the receivers of each granted filter.
func (b *Bridge) OnSubscribed(cl *mqtt.Client, pk packets.Packet, codes []byte) {
	l := b.linkOf(cl)
	if l == nil {
		return
	}
	sent := b.awaitSuback(cl, pk.PacketID) // mochi writes the SUBACK after this hook
	for i, f := range pk.Filters {
		l.mu.Lock()
		rs := l.staged[f.Filter]
		delete(l.staged, f.Filter)
		if i >= len(codes) || codes[i] > 2 {
			l.mu.Unlock()
			closeAll(rs)
			b.forgetReads(cl, f.Filter)
			continue
		}
		old := l.subs[f.Filter]
		l.subs[f.Filter] = rs
		l.mu.Unlock()
		closeAll(old)
		go b.startSubscription(cl, l, f, rs, codes[i], old != nil, sent)
		b.Metrics.Subscription(true)
		b.Log.Info("subscribed", "client", cl.ID, "filter", f.Filter, "addresses", len(rs), "qos", codes[i])
	}
	b.saveSession(cl, l, 0) // before the SUBACK (session_store.go)
}

func (b *Bridge) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	l := b.linkOf(cl)
	if l == nil {
		return
	}
	for _, f := range pk.Filters {
		l.mu.Lock()
		rs := l.subs[f.Filter]
		delete(l.subs, f.Filter)
		l.mu.Unlock()
		closeAll(rs)
	}
	b.saveSession(cl, l, 0)
}

// sub is one address of a subscription: its receiver and a message that
// arrived while the attach was probed.
type sub struct {
	r     *amqp.Receiver
	first *amqp.Message
}

// probeWindow: qdrouterd answers a receiver it refuses (no recv) with an
// attach that names the source and then a detach with
// amqp:unauthorized-access; the SUBACK waits this long for that detach.
const probeWindow = 300 * time.Millisecond

// probeReceiver attaches a receiver to address a and waits probeWindow for
// the router's detach (a refusal) or a first message.
func (b *Bridge) probeReceiver(l *link, a string) (*amqp.Receiver, *amqp.Message, error) {
	ctx, cancel := context.WithTimeout(l.ctx, b.Timeout)
	r, err := l.sess.NewReceiver(ctx, a, &amqp.ReceiverOptions{Credit: int32(*b.Config.ReceiveMaximum)})
	cancel()
	if err != nil {
		return r, nil, err
	}
	pctx, pcancel := context.WithTimeout(l.ctx, probeWindow)
	first, err := r.Receive(pctx, nil)
	pcancel()
	if errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return r, first, err
}

// refusedByPolicy: the router's answer to a link the user may not attach
// (qdrouterd: amqp:unauthorized-access, "link disallowed by local policy").
func refusedByPolicy(err error) bool {
	var e *amqp.Error
	if errors.As(err, &e) {
		return e.Condition == amqp.ErrCondUnauthorizedAccess
	}
	var le *amqp.LinkError
	if errors.As(err, &le) && le.RemoteErr != nil {
		return le.RemoteErr.Condition == amqp.ErrCondUnauthorizedAccess
	}
	return false
}

// attach opens a receiver per address on the client's connection, all at
// once, and keeps those the router did not detach within probeWindow.
func (b *Bridge) attach(cl *mqtt.Client, l *link, addresses []string) []*sub {
	out := make([]*sub, len(addresses))
	var wg sync.WaitGroup
	for i, a := range addresses {
		wg.Add(1)
		go func(i int, a string) {
			defer wg.Done()
			var r *amqp.Receiver
			var first *amqp.Message
			var err error
			// a link that ends otherwise than by the router's refusal (an EOF
			// while the other links of the same SUBSCRIBE were being refused
			// was seen) is attached again, at most twice
			for attempt := 0; attempt < 3; attempt++ {
				if attempt > 0 && r != nil {
					closeAll([]*sub{{r: r}})
				}
				r, first, err = b.probeReceiver(l, a)
				if err == nil || refusedByPolicy(err) || l.ctx.Err() != nil {
					break
				}
			}
			if err != nil {
				b.Log.Info("receiver refused by the router", "client", cl.ID, "user", l.user, "address", a, "error", err)
				if r != nil {
					closeAll([]*sub{{r: r}})
				}
				return
			}
			out[i] = &sub{r: r, first: first}
		}(i, a)
	}
	wg.Wait()
	var kept []*sub
	for _, s := range out {
		if s != nil {
			kept = append(kept, s)
		}
	}
	return kept
}
