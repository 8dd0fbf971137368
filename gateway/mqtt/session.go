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
//     the link over (a connected holder is disconnected by mochi, 0x8E);
//     another user's CONNECT with that id is refused (0x85 / 3.1.1 2).
//   - mochi's session expiry (OnClientExpired) closes the link: its
//     unsettled deliveries go back to the router.

import (
	"context"
	"errors"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

var errOtherUser = errors.New("the client id's session belongs to another user")

// connState is what belongs to one MQTT connection (not to its session).
type connState struct {
	acks     chan pending  // publishes waiting for the router's outcome, in order
	drained  chan struct{} // closed when ackLoop has handled every one
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

// expires: mochi's rule, the session ends with the connection.
func expires(cl *mqtt.Client) bool {
	return (cl.Properties.ProtocolVersion == 5 && cl.Properties.Props.SessionExpiryInterval == 0) ||
		(cl.Properties.ProtocolVersion < 5 && cl.Properties.Clean)
}

// openSession decides at CONNECT which link the client gets: the client
// id's session when it persists and the CONNECT has clean start 0 (mochi
// resumes it too), else the fresh link l2 (an older session of the id
// ends). When resumed, l2 is to be closed and the caller waits on prev: the
// previous connection of the session stopped (a connected one is
// disconnected here, MQTT 5 0x8E) and its publishes' outcomes recorded, so
// a resend on this connection finds them.
func (b *Bridge) openSession(cl *mqtt.Client, clean bool, l2 *link, cs *connState) (l *link, resumed bool,
	prev <-chan struct{}, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions == nil {
		b.sessions = map[string]*link{}
	}
	old := b.sessions[cl.ID]
	if old != nil && old.user != l2.user {
		return nil, false, nil, errOtherUser
	}
	resumable := !expires(cl)
	if old != nil && !clean && old.resumable {
		old.dmu.Lock()
		holder := old.owner
		old.owner = nil // deliveries wait until OnSessionEstablished (mochi copies the in-flight first)
		old.resumable = resumable
		old.dmu.Unlock()
		if holder != nil && !holder.Closed() {
			go func() { _ = b.Server.DisconnectClient(holder, packets.ErrSessionTakenOver) }()
		}
		if old.cs != nil {
			prev = old.cs.drained
		}
		old.cs = cs
		return old, true, prev, nil
	}
	if old != nil { // ends: closed now when offline, else at its holder's OnDisconnect
		old.dmu.RLock()
		offline := old.owner == nil || old.owner.Closed()
		old.dmu.RUnlock()
		if offline {
			go b.closeLink(old)
		}
	}
	l2.client, l2.resumable, l2.owner, l2.cs = cl.ID, resumable, cl, cs
	b.sessions[cl.ID] = l2
	return l2, false, nil, nil
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
// connection (the session stays, offline, or was taken over).
func (b *Bridge) detach(cl *mqtt.Client, l *link, expire bool) (keep bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[cl.ID] != l {
		return false // replaced by a clean session of the id
	}
	l.dmu.RLock()
	owner := l.owner
	l.dmu.RUnlock()
	if owner != cl {
		return true // taken over: the new connection has it
	}
	if expire {
		delete(b.sessions, cl.ID)
		return false
	}
	return true
}

// OnClientExpired: mochi ended an offline session (its expiry passed).
func (b *Bridge) OnClientExpired(cl *mqtt.Client) {
	b.mu.Lock()
	l := b.sessions[cl.ID]
	if l != nil {
		l.dmu.RLock()
		mine := l.owner == cl
		l.dmu.RUnlock()
		if !mine {
			l = nil
		} else {
			delete(b.sessions, cl.ID)
		}
	}
	b.mu.Unlock()
	if l != nil {
		b.Log.Info("session expired", "client", cl.ID, "user", l.user)
		b.closeLink(l)
	}
}

// closeLink ends a session's AMQP side: its unsettled deliveries go back to
// the router (released by the connection's end).
func (b *Bridge) closeLink(l *link) {
	l.cancel()
	_ = l.conn.Close()
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
