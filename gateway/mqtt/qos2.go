package main

// QoS 2 from a client, exactly once (docs/mqtt-design.md "QoS 2 and
// persistent sessions"): the packet id is remembered in the session from
// the PUBLISH until the PUBREL. While it is remembered a PUBLISH with the
// same id (a DUP resend after a reconnect) is not forwarded again: it gets
// the first one's PUBREC once the router's outcome of the first is known.
// At most `max` ids are remembered (receive_maximum): one more is a
// "receive maximum exceeded". A persistent session's record carries the
// accepted ids (session_store.go), so they outlive a restart.

import (
	"errors"
	"slices"
	"sync"
)

var errReceiveMaximum = errors.New("QoS 2 receive maximum exceeded")

// inbound is one QoS 2 packet id of a client: forwarded, its outcome known
// when done is closed (accepted: PUBREC success; else the id is forgotten).
type inbound struct {
	done     chan struct{}
	accepted bool
	code     byte // the PUBREC reason code when not accepted
}

// qos2In is the session's set of QoS 2 packet ids not yet released.
type qos2In struct {
	mu  sync.Mutex
	max int
	ids map[uint16]*inbound
}

func newQos2In(max int) *qos2In { return &qos2In{max: max, ids: map[uint16]*inbound{}} }

// begin a PUBLISH with id: fresh (forward it; settle must follow) or a
// duplicate (wait for e.done, answer with its outcome, do not forward).
func (q *qos2In) begin(id uint16) (e *inbound, fresh bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.ids[id]; ok {
		return e, false, nil
	}
	if len(q.ids) >= q.max {
		return nil, false, errReceiveMaximum
	}
	e = &inbound{done: make(chan struct{})}
	q.ids[id] = e
	return e, true, nil
}

// settle records the router's outcome of a fresh id: accepted, it stays
// until released; refused (code: its PUBREC reason), it is forgotten, so a
// resend is a new attempt.
func (q *qos2In) settle(id uint16, e *inbound, accepted bool, code byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-e.done:
		return // settled already
	default:
	}
	e.accepted, e.code = accepted, code
	if !accepted && q.ids[id] == e {
		delete(q.ids, id)
	}
	close(e.done)
}

// release: the client's PUBREL; false when the id is not remembered.
func (q *qos2In) release(id uint16) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.ids[id]
	delete(q.ids, id)
	return ok
}

// accepted: the ids the router accepted, not released yet (sorted).
func (q *qos2In) accepted() []uint16 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []uint16
	for id, e := range q.ids {
		select {
		case <-e.done:
			if e.accepted {
				out = append(out, id)
			}
		default:
		}
	}
	slices.Sort(out)
	return out
}

// restore: ids a stored record names (session_store.go), accepted before
// a restart: a resend of one gets PUBREC success and is not forwarded.
func (q *qos2In) restore(ids []uint16) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, id := range ids {
		if _, ok := q.ids[id]; !ok {
			e := &inbound{done: make(chan struct{}), accepted: true}
			close(e.done)
			q.ids[id] = e
		}
	}
}

func (q *qos2In) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids)
}
