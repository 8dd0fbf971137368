package main

// Shared router connections (docs/mqtt-design.md "Connections to the
// router"). The MQTT clients of one user share AMQP connections to the
// router: each is authenticated as that user (SASL PLAIN, relayed by the
// router to the auth service) and has one session; the links of up to
// clients_per_amqp_connection MQTT sessions (a link, bridge.go) are
// attached on it. The router stays the only enforcer: a shared connection
// is the user's own, so its vhost / address-authz decides every link as it
// did on a connection per client.
//
//   - Every CONNECT logs in: when the user has a shared connection with
//     room, a login connection (SASL, open, close) checks the password
//     first; when it has none, the CONNECT's own connection becomes the
//     new shared one. A wrong or revoked password is refused at the next
//     CONNECT as before (classify()).
//   - A link's senders and receivers are closed when its MQTT session
//     ends; the connection is closed when its last link goes (no linger).
//   - A shared connection that dies (router restart, failover) disconnects
//     every connected client that holds a link on it (the client
//     reconnects; its will is sent on a redialled connection, will.go).
//     Before, nothing watched a client's own connection: a client stayed
//     connected with dead links until a publish failed.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// shared is one AMQP connection of a user, with its one session.
type shared struct {
	user  string
	id    int64
	conn  *amqp.Conn
	sess  *amqp.Session
	ready chan struct{} // closed when dialled (err set on failure)
	err   error
	// pool.mu: the links on it plus the reservations of CONNECTs logging in
	n       int
	links   map[*link]struct{}
	dead    bool // out of the pool: failed, lost or closed
	closing bool // closed by the gateway (its last link went)
}

// pool of shared connections, per user.
type pool struct {
	mu    sync.Mutex
	users map[string][]*shared
	seq   int64
}

// reserve a place on a connection of user with room (fresh false: it may
// still be dialling, wait for ready), or a new pending one the caller
// dials (fresh true).
func (p *pool) reserve(user string, max int) (s *shared, fresh bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == nil {
		p.users = map[string][]*shared{}
	}
	for _, s := range p.users[user] {
		if !s.dead && s.n < max {
			s.n++
			return s, false
		}
	}
	p.seq++
	s = &shared{user: user, id: p.seq, ready: make(chan struct{}), n: 1, links: map[*link]struct{}{}}
	p.users[user] = append(p.users[user], s)
	return s, true
}

// remove s from its user's list (p.mu held).
func (p *pool) remove(s *shared) {
	s.dead = true
	removeFrom(p.users, s.user, s)
}

// removeFrom takes v out of m[k] (its first occurrence), deleting the key
// when its list is empty; the pool's connections per user and the delayed
// wills per client id (will.go) keep such lists.
func removeFrom[K comparable, V comparable](m map[K][]V, k K, v V) {
	list := m[k]
	if i := slices.Index(list, v); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(m, k)
	} else {
		m[k] = list
	}
}

// fail: the pending connection s could not be dialled.
func (p *pool) fail(s *shared, err error) {
	p.mu.Lock()
	s.err = err
	s.n--
	p.remove(s)
	p.mu.Unlock()
	close(s.ready)
}

// hold: l takes its reserved place on s; false when s was lost meanwhile
// (its loss disconnected the clients it held then, not l's).
func (p *pool) hold(s *shared, l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.links[l] = struct{}{}
	return !s.dead
}

// release a place on s (l nil: a reservation); the last one closes it.
func (p *pool) release(s *shared, l *link) {
	p.mu.Lock()
	if l != nil {
		if _, ok := s.links[l]; !ok {
			p.mu.Unlock()
			return
		}
		delete(s.links, l)
	}
	s.n--
	last := s.n <= 0 && s.conn != nil && !s.closing
	if last {
		s.closing = true
		if !s.dead {
			p.remove(s)
		}
	}
	p.mu.Unlock()
	if last {
		_ = s.conn.Close()
	}
}

// alive: dialled (not still dialling) and neither lost nor closed.
func (p *pool) alive(s *shared) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.err == nil && !s.dead && s.conn != nil
}

// Connections: the number of shared connections (all users).
func (p *pool) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.users {
		n += len(l)
	}
	return n
}

// ready: the pending s is dialled; its loss is watched from now on.
func (b *Bridge) ready(s *shared, conn *amqp.Conn, sess *amqp.Session) {
	b.pool.mu.Lock()
	s.conn, s.sess = conn, sess
	b.pool.mu.Unlock()
	close(s.ready)
	go func() {
		<-conn.Done()
		b.pool.mu.Lock()
		closing := s.closing
		if !s.dead {
			b.pool.remove(s)
		}
		var ls []*link
		for l := range s.links {
			ls = append(ls, l)
		}
		b.pool.mu.Unlock()
		if closing {
			return
		}
		b.Log.Info("router connection lost", "user", s.user, "connection", s.id, "links", len(ls), "error", conn.Err())
		for _, l := range ls {
			b.lost(l)
		}
	}()
}

// errRouterLost: the DISCONNECT of a client whose shared connection died
// (MQTT 5 0x80 with a reason string: 0x88 Server unavailable is a CONNACK
// code only, not allowed in a DISCONNECT).
var errRouterLost = packets.Code{Code: packets.ErrUnspecifiedError.Code, Reason: "router connection lost"}

// lost: l's shared connection died: its connected client is disconnected
// (MQTT 5 DISCONNECT 0x80 "router connection lost", 3.1.1 the TCP
// connection closed). Its session, persistent or not, is not resumed by a
// later CONNECT (session.go routerLost).
func (b *Bridge) lost(l *link) {
	b.mu.Lock()
	cl := l.holder
	held := cl != nil && b.links[cl] == l
	b.mu.Unlock()
	if !held || cl.Closed() {
		return
	}
	if cl.Properties.ProtocolVersion == 5 {
		_ = b.Server.DisconnectClient(cl, errRouterLost)
	} else {
		cl.Stop(errRouterLost)
	}
}

// acquire a place on a shared connection of user after a login with
// password: the CONNECT's own connection when it becomes a new shared one,
// else a login connection of its own (opened and closed).
func (b *Bridge) acquire(cl *mqtt.Client, user, password string) (*shared, packets.Code, byte, error) {
	max := int(*b.Config.ClientsPerAMQPConnection)
	for attempt := 0; attempt < 3; attempt++ {
		s, fresh := b.pool.reserve(user, max)
		conn, sess, code, v3, err := b.dialRouters(cl, user, password, fresh)
		if fresh {
			if err != nil {
				b.pool.fail(s, err)
				return nil, code, v3, err
			}
			b.ready(s, conn, sess)
			return s, code, v3, nil
		}
		if err != nil {
			b.pool.release(s, nil)
			return nil, code, v3, err
		}
		go func() { _ = conn.Close() }() // the login's answer is all it was for
		select {
		case <-s.ready:
		case <-time.After(2 * b.Timeout):
		}
		if b.pool.alive(s) {
			return s, code, v3, nil
		}
		b.pool.release(s, nil) // its dial failed or it was lost: another
	}
	return nil, packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code,
		errors.New("no shared router connection could be had")
}

// dialRouters tries the routers in order; a refusal of the credentials is
// final, an unreachable router moves on to the next. session: the
// connection is to be shared (one session begun on it), else a login.
func (b *Bridge) dialRouters(cl *mqtt.Client, user, password string, session bool) (*amqp.Conn, *amqp.Session,
	packets.Code, byte, error) {
	b.pool.mu.Lock()
	b.pool.seq++
	container := fmt.Sprintf("mqtt-gateway-%d", b.pool.seq)
	b.pool.mu.Unlock()
	if max := *b.Config.ClientsPerAMQPConnection; max == 1 {
		container = "mqtt-" + cl.ID // one connection per client, as before
	}
	opts := &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous(), ContainerID: container, MaxSessions: 1,
		TLSConfig: b.TLS}
	if user != "" {
		opts.SASLType = amqp.SASLTypePlain(user, password)
	}
	scheme := "amqp://"
	if b.TLS != nil {
		scheme = "amqps://"
	}
	var last error
	code, v3 := packets.ErrServerUnavailable, packets.Err3ServerUnavailable.Code
	for _, router := range b.Config.Routers {
		ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
		conn, err := amqp.Dial(ctx, scheme+router, opts)
		var sess *amqp.Session
		if err == nil && session {
			sess, err = conn.NewSession(ctx, nil)
			if err != nil {
				_ = conn.Close()
			}
		}
		cancel()
		if err == nil {
			return conn, sess, code, v3, nil
		}
		last = err
		var final bool
		if code, v3, final = classify(err); final {
			return nil, nil, code, v3, err
		}
		b.Log.Info("router unreachable", "router", router, "error", err)
	}
	return nil, nil, code, v3, last
}

// takeSubs empties l's granted and staged subscriptions and returns their
// receivers (l.mu held).
func (l *link) takeSubs() []*sub {
	var rs []*sub
	for f, s := range l.subs {
		rs = append(rs, s...)
		delete(l.subs, f)
	}
	for f, s := range l.staged {
		rs = append(rs, s...)
		delete(l.staged, f)
	}
	return rs
}

// closeLink ends a session's AMQP side: its unsettled deliveries are
// released back to the router, its receivers and senders detached, and its
// place on the shared connection given back (the last one closes it).
// Idempotent.
func (b *Bridge) closeLink(l *link) {
	if !l.closed.CompareAndSwap(false, true) {
		return
	}
	l.cancel()
	l.mu.Lock()
	ds := l.deliveries
	l.deliveries = map[uint16]delivery{}
	rs := l.takeSubs()
	ss := l.senders
	l.senders = map[string]*amqp.Sender{}
	l.mu.Unlock()
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, d := range ds {
		_ = d.r.ReleaseMessage(ctx, d.m)
	}
	for _, r := range rs {
		wg.Add(1)
		go func(r *amqp.Receiver) { defer wg.Done(); _ = r.Close(ctx) }(r.r)
	}
	for _, s := range ss {
		wg.Add(1)
		go func(s *amqp.Sender) { defer wg.Done(); _ = s.Close(ctx) }(s)
	}
	wg.Wait()
	b.pool.release(l.sc, l)
}
