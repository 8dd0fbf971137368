// Retained messages (MQTT "retain"), kept in the space's brokers, not in
// the gateway: one durable, non-destructive last-value queue per space
// (retained_address, e.g. "$mqtt/space-a/retained"; last-value key: the
// application property mqtt_topic), reached through the router network on
// the gateway's own service connection (service_routers, service_user,
// service_password_file). A retained publish replaces the topic's message
// in that queue; an empty one replaces it with a tombstone (empty body)
// that means "cleared". A new subscription reads the queue (a receiver on a
// non-destructive queue gets every message it holds; drained, then closed)
// and delivers the matching, non-empty ones with the retain flag.
// docs/mqtt-design.md ("Retained messages: what is built").
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// RetainKey is the application property that holds the topic: the queue's
// last-value key (the broker's address-setting default-last-value-key).
const RetainKey = "mqtt_topic"

// Retained is one retained message read from the store.
type Retained struct {
	Topic   string
	Payload []byte
	Qos     byte
	props   map[string]any // the message's application properties (the takeover watcher's, takeover.go)
}

// RetainStore is the gateway's service connection to the retained queue.
type RetainStore struct {
	Routers  []string
	Address  string
	User     string
	Password string
	TLS      *tls.Config
	Log      *slog.Logger
	Timeout  time.Duration
	mu       sync.Mutex
	conn     *amqp.Conn
	sess     *amqp.Session
	sender   *amqp.Sender
}

// lockedSession is session under s.mu.
func (s *RetainStore) lockedSession(ctx context.Context) (*amqp.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session(ctx)
}

// session dials the service listener (the routers in order) once and
// keeps the connection; a failed operation drops it (reset) and the next
// one dials again.
func (s *RetainStore) session(ctx context.Context) (*amqp.Session, error) {
	if s.sess != nil {
		return s.sess, nil
	}
	conn, sess, err := s.dial(ctx, "mqtt-gateway-retained")
	if err != nil {
		return nil, err
	}
	s.conn, s.sess = conn, sess
	return sess, nil
}

// dial: a connection with one session to the first service router that
// answers (the store's, and the observer's own, observer.go).
func (s *RetainStore) dial(ctx context.Context, container string) (*amqp.Conn, *amqp.Session, error) {
	opts := &amqp.ConnOptions{SASLType: amqp.SASLTypePlain(s.User, s.Password), ContainerID: container,
		TLSConfig: s.TLS}
	scheme := "amqp://"
	if s.TLS != nil {
		scheme = "amqps://"
	}
	var last error
	for _, router := range s.Routers {
		conn, err := amqp.Dial(ctx, scheme+router, opts)
		if err != nil {
			last = err
			continue
		}
		sess, err := conn.NewSession(ctx, nil)
		if err != nil {
			_ = conn.Close()
			last = err
			continue
		}
		return conn, sess, nil
	}
	return nil, nil, fmt.Errorf("retained store: no service router reachable: %v", last)
}

func (s *RetainStore) reset() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.sess, s.sender = nil, nil, nil
}

// Put stores topic's retained message (an empty payload clears it) and
// returns once the broker accepted it (durable, unsettled). The lock is
// held only to get the connection and the sender: sends of several clients
// are in flight together (go-amqp links are safe for concurrent use).
//
// A send that fails on a link or connection the store had open before (the
// broker restarted: the router detaches the routed link with
// qd:routed-link-lost; the queue moved: the old broker refuses it) is tried
// once more on a fresh sender, and on a fresh connection when the
// connection ended (drop). Sending twice is harmless: the queue keeps the
// last value per topic.
func (s *RetainStore) Put(topic string, payload []byte, qos byte) error {
	m := amqp.NewMessage(payload)
	m.Header = &amqp.MessageHeader{Durable: true}
	m.ApplicationProperties = map[string]any{RetainKey: topic}
	m.Annotations = amqp.Annotations{annotationQos: int32(qos), annotationRetain: true}
	return s.send(m)
}

// send m durable and unsettled, awaiting the broker's accepted (Put).
func (s *RetainStore) send(m *amqp.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	var err error
	for attempt, sends := 0, 0; attempt < 2 && sends < maxSends; sends++ {
		var sess *amqp.Session
		var sender *amqp.Sender
		if sess, sender, err = s.link(ctx); err != nil {
			return err
		}
		if err = sender.Send(ctx, m, nil); err == nil {
			return nil
		}
		s.drop(sess, sender, err)
		if ctx.Err() != nil {
			break
		}
		if !closedHere(err) {
			attempt++
		}
	}
	return fmt.Errorf("retained store: %w", err)
}

// maxSends bounds the sends of one message, those closedHere included.
const maxSends = 5

// closedHere: err is the end of a sender this process closed itself (a
// concurrent send's failure made drop replace the shared sender under this
// one), not a failure of the message or of its link's peer: the send is
// made again on the new sender without counting as an attempt. Otherwise a
// send whose second attempt met a sender another send had just dropped
// failed, and its publisher got an error for a store that works.
func closedHere(err error) bool {
	var le *amqp.LinkError
	return errors.As(err, &le) && le.RemoteErr == nil && !connLost(err)
}

// link returns the session and the queue's sender, dialing when needed.
func (s *RetainStore) link(ctx context.Context) (*amqp.Session, *amqp.Sender, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, err := s.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	if s.sender == nil {
		if s.sender, err = sess.NewSender(ctx, s.Address, nil); err != nil { // s.sender stays nil
			if connLost(err) {
				s.reset()
			}
			return nil, nil, fmt.Errorf("retained store: sender to %s: %w", s.Address, err)
		}
	}
	return sess, s.sender, nil
}

// drop forgets what err broke, unless another caller already replaced it:
// the connection when it (or its session) ended, else only the queue's
// sender (when sender is the store's; nil: none). The connection is shared
// by every read and send in flight: a link's failure (a rejected delivery,
// a routed link the router or the broker detached while the queue moves)
// must not end their reads (seen in test_mqtt_retained: a heartbeat's
// rejection closed the connection under a subscription's read). The next
// operation dials, or attaches, again.
func (s *RetainStore) drop(sess *amqp.Session, sender *amqp.Sender, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess {
		return
	}
	if connLost(err) {
		s.reset()
		return
	}
	if sender != nil && s.sender == sender {
		s.sender = nil
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = sender.Close(ctx)
			cancel()
		}()
	}
}

// connLost: err says the connection or its session ended, or an operation
// ran out of time (the connection's state unknown); not a link's failure.
func connLost(err error) bool {
	var ce *amqp.ConnError
	var se *amqp.SessionError
	return errors.As(err, &ce) || errors.As(err, &se) || errors.Is(err, context.DeadlineExceeded)
}

// readCredit is the receiver's credit while the queue is read; readIdle
// ends a read: no message for that long after the last one (or after the
// attach) means the queue has given everything. A drain (FLOW drain=true)
// would end it exactly, but qdrouterd 1.19 did not answer it across the
// link route to Artemis 2.40 (DrainCredit waited until its timeout: seen
// in tests/integration/test_mqtt_retained.py's first runs).
const (
	readCredit = 256
	readIdle   = 300 * time.Millisecond
)

// Match returns the retained messages whose topic matches filter (mochi's
// matching), the last one per topic, tombstones left out. Reads of several
// subscriptions run together (one receiver each on the shared session).
func (s *RetainStore) Match(filter string) ([]Retained, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	all, err := s.readSelected(ctx, topicsSelector)
	if err != nil {
		return nil, err
	}
	return matching(all, filter), nil
}

// topicsSelector lets the topics' values through, and recordsSelector the
// gateway's own records ("$session/", "$instance/": session_store.go): a
// subscription's read does not carry every session record along, and the
// heartbeats, written all the time, do not keep it from going idle.
const (
	topicsSelector  = RetainKey + " NOT LIKE '$%'"
	recordsSelector = RetainKey + " LIKE '$%'"
)

// readRecords: the gateway's records in the queue, in order (session_sweep.go).
func (s *RetainStore) readRecords() ([]Retained, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	return s.readSelected(ctx, recordsSelector)
}

// readSelected: the queue's messages the broker's selector (JMS syntax, on
// the application properties; "": all) lets through, in order.
//
// A read that fails is made once more (on a fresh connection when the
// connection ended): the queue's routed link is lost while its broker
// restarts or the queue moves to another broker, and a subscriber would
// miss the retained messages.
func (s *RetainStore) readSelected(ctx context.Context, selector string) ([]Retained, error) {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var sess *amqp.Session
		if sess, err = s.lockedSession(ctx); err != nil {
			return nil, err
		}
		var all []Retained
		if all, err = s.read(ctx, sess, selector); err == nil {
			return all, nil
		}
		s.drop(sess, nil, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func (s *RetainStore) read(ctx context.Context, sess *amqp.Session, selector string) ([]Retained, error) {
	opts := &amqp.ReceiverOptions{Credit: readCredit}
	if selector != "" {
		opts.Filters = []amqp.LinkFilter{amqp.NewSelectorFilter(selector)}
	}
	r, err := sess.NewReceiver(ctx, s.Address, opts)
	if err != nil {
		return nil, fmt.Errorf("retained store: receiver on %s: %w", s.Address, err)
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = r.Close(cctx)
		ccancel()
	}()
	var out []Retained
	for {
		ictx, icancel := context.WithTimeout(ctx, readIdle)
		m, err := r.Receive(ictx, nil)
		icancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return out, nil // idle: everything was read
			}
			return nil, fmt.Errorf("retained store: read: %w", err)
		}
		_ = r.AcceptMessage(ctx, m) // non-destructive: the broker keeps it
		if t, ok := m.ApplicationProperties[RetainKey].(string); ok {
			out = append(out, Retained{Topic: t, Payload: payload(m), Qos: qosOf(m, 2), props: m.ApplicationProperties})
		}
	}
}

// matching keeps the last message per topic, drops tombstones (cleared
// topics) and keeps the topics filter matches.
func matching(all []Retained, filter string) []Retained {
	last := map[string]int{}
	for i, m := range all {
		last[m.Topic] = i
	}
	idx := mqtt.NewTopicsIndex()
	idx.Subscribe("f", packets.Subscription{Filter: filter})
	var out []Retained
	for i, m := range all {
		if last[m.Topic] != i || len(m.Payload) == 0 || strings.HasPrefix(m.Topic, "$") {
			continue // superseded, cleared, or a record of the gateway (session_store.go)
		}
		if len(idx.Subscribers(m.Topic).Subscriptions) > 0 {
			out = append(out, m)
		}
	}
	return out
}
