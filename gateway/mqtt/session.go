package main

// Persistent sessions within one gateway instance (docs/mqtt-design.md
// "QoS 2 and persistent sessions"). A session is the client id's link: its
// AMQP connection (the client's own credentials), the receivers of its
// subscriptions, its unsettled deliveries and its QoS 2 packet ids. mochi
// keeps the MQTT side (the offline client with its in-flight messages, the
// session expiry, the takeover with DISCONNECT 0x8E, session present); the
// bridge keeps the link alive as long as mochi keeps the client:
//
//   - the client goes away and mochi keeps its session (3.1.1 clean session
//     0, MQTT 5 session expiry > 0): the link stays; deliveries that arrive
//     are put in the offline client's in-flight messages (mochi copies them
//     to the next connection and resends them after its CONNACK); each
//     receiver holds at most receive_maximum unsettled, then the router
//     stops sending to it (a queue keeps the rest in the broker).
//   - a CONNECT with that client id, the same user and clean start 0 takes
//     the link over (a connected holder is disconnected, MQTT 5 0x8E);
//     another user's CONNECT with that id is refused (0x85 / 3.1.1 2).
//   - mochi's session expiry (OnClientExpired) closes the link: its
//     unsettled deliveries go back to the router.

import (
	"context"
	"errors"
	"sync"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

var errOtherUser = errors.New("the client id's session belongs to another user")

// connState is what belongs to one MQTT connection (not to its session).
type connState struct {
	acks     chan pending  // publishes waiting for the router's outcome, in order
	drained  chan struct{} // closed when ackLoop has handled every one
	acksOnce sync.Once     // ackLoop is started by the first QoS 1 / 2 publish, or at OnDisconnect
	done     chan struct{} // closed at OnDisconnect
	waits    context.Context
	stopWait context.CancelFunc
	will     *will          // nil: none registered
	resumed  bool           // the CONNACK's session present
	stash    packets.Packet // an outbound in-flight message mochi drops when a PUBLISH reuses its id
	stashed  bool
}

func newConnState(n int) *connState {
	ctx, cancel := context.WithCancel(context.Background())
	return &connState{acks: make(chan pending, n), drained: make(chan struct{}), done: make(chan struct{}),
		waits: ctx, stopWait: cancel}
}

// gone: the client's connection has ended (OnDisconnect).
func (cs *connState) gone() bool {
	select {
	case <-cs.done:
		return true
	default:
		return false
	}
}

// expires: mochi's rule, the session ends with the connection.
func expires(cl *mqtt.Client) bool {
	return (cl.Properties.ProtocolVersion == 5 && cl.Properties.Props.SessionExpiryInterval == 0) ||
		(cl.Properties.ProtocolVersion < 5 && cl.Properties.Clean)
}

// openSession decides at CONNECT which link the client gets: the client
// id's session when it persists and the CONNECT has clean start 0 (mochi
// resumes it too), else the fresh link l2 (an older session of the id
// ends). When resumed, l2 is to be closed and the caller goes on with
// takeOver. Only b.mu is taken here: a delivery may be stuck writing to a
// dead connection, and with it the link's dmu.
func (b *Bridge) openSession(cl *mqtt.Client, clean bool, l2 *link, cs *connState) (l *link, resumed bool,
	t takeover, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions == nil {
		b.sessions = map[string]*link{}
	}
	old := b.sessions[cl.ID]
	if old != nil && old.user != l2.user {
		return nil, false, takeover{}, errOtherUser
	}
	resumable := !expires(cl)
	// a session whose shared router connection died has dead receivers:
	// it is not resumed (CONNACK session present 0, the client subscribes
	// again) but ended like a clean start's
	if old != nil && !clean && old.resumable && !old.routerLost() {
		t = takeover{l: old, holder: old.holder}
		if old.cs != nil {
			t.prev = old.cs.drained
		}
		old.holder, old.cs, old.resumable = cl, cs, resumable
		return old, true, t, nil
	}
	if old != nil && (old.holder == nil || old.holder.Closed()) {
		go b.closeLink(old) // offline: ends now; else at its holder's OnDisconnect
	}
	l2.client, l2.resumable, l2.owner, l2.holder, l2.cs = cl.ID, resumable, cl, cl, cs
	b.sessions[cl.ID] = l2
	return l2, false, takeover{}, nil
}

// routerLost: the shared router connection under l has ended (lost or
// closed). sc.conn was set before l was made (pool.go ready), so reading it
// under b.mu needs no pool lock.
func (l *link) routerLost() bool {
	if l.sc == nil || l.sc.conn == nil {
		return false
	}
	select {
	case <-l.sc.conn.Done():
		return true
	default:
		return false
	}
}

// takeover of a resumed session by a new connection.
type takeover struct {
	l      *link
	holder *mqtt.Client    // the connection that held it
	prev   <-chan struct{} // closed when that connection's publishes have their outcomes
}

// run: a connected holder is disconnected (MQTT 5 0x8E; mochi would do it
// after this hook, too late to wait for it), deliveries pause until
// OnSessionEstablished (mochi copies the in-flight messages to the new
// connection first), and the holder's publishes get their outcomes
// recorded, so a resend on the new connection finds them.
func (t takeover) run(b *Bridge) {
	if t.holder != nil && !t.holder.Closed() {
		_ = b.Server.DisconnectClient(t.holder, packets.ErrSessionTakenOver)
	}
	t.l.dmu.Lock()
	t.l.owner = nil
	t.l.dmu.Unlock()
	if t.prev != nil {
		select {
		case <-t.prev:
		case <-time.After(2 * b.Timeout):
		}
	}
}

// OnSessionEstablished: mochi has written the CONNACK and resent the
// session's in-flight messages; deliveries go to this connection now.
func (b *Bridge) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	if l := b.linkOf(cl); l != nil {
		l.dmu.Lock()
		l.owner = cl
		l.dmu.Unlock()
	}
}

// detach at OnDisconnect: keep is true when the link outlives the
// connection (the session stays, offline, or was taken over); own is true
// when this connection held the session to its end (its record is then
// written or removed, session_store.go).
func (b *Bridge) detach(cl *mqtt.Client, l *link, expire bool) (keep, own bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[cl.ID] != l {
		return false, false // replaced by a clean session of the id
	}
	if l.holder != cl {
		return true, false // taken over: the new connection has it
	}
	if expire {
		delete(b.sessions, cl.ID)
		return false, true
	}
	return true, true
}

// OnClientExpired: mochi ended an offline session (its expiry passed).
func (b *Bridge) OnClientExpired(cl *mqtt.Client) {
	b.mu.Lock()
	l := b.sessions[cl.ID]
	if l != nil {
		if l.holder != cl {
			l = nil
		} else {
			delete(b.sessions, cl.ID)
		}
	}
	b.mu.Unlock()
	if l != nil {
		b.Log.Info("session expired", "client", cl.ID, "user", l.user)
		b.endSession(cl.ID, l)
		b.closeLink(l)
	}
}

// owned waits for the session's current connection (none while a takeover
// is under way) and returns it with l.dmu read-locked; nil: the session ended.
func (l *link) owned() *mqtt.Client {
	for {
		l.dmu.RLock()
		if l.owner != nil {
			return l.owner
		}
		l.dmu.RUnlock()
		select {
		case <-l.ctx.Done():
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// OnPacketEncode: the CONNACK's session present is the bridge's decision
// (the same rule as mochi's; this keeps them equal in a race with an old
// connection's end).
func (b *Bridge) OnPacketEncode(cl *mqtt.Client, pk packets.Packet) packets.Packet {
	if pk.FixedHeader.Type == packets.Connack && pk.ReasonCode == 0 {
		if cs := b.connOf(cl); cs != nil {
			pk.SessionPresent = cs.resumed
		}
	}
	return pk
}

// willLink: a will of a connection whose session lives on is sent on a
// connection of its own (fireWill closes what it is given).
func (b *Bridge) willLink(cl *mqtt.Client, l *link) *link {
	wl, _, _, err := b.dial(cl, l.user, l.password)
	if err != nil {
		b.Log.Info("will not sent: router not reachable", "client", cl.ID, "error", err)
		return nil
	}
	return wl
}
