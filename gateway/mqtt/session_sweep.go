// The end of session records whose gateway died (docs/mqtt-design.md
// "Sessions that survive a gateway restart"). A record written while its
// client was connected has no disconnect time; if the gateway process that
// held the client is killed and the client never comes back, nothing
// would ever write its end. So:
//
//   - each gateway process has an instance id (random, per process) and
//     writes a heartbeat, the key "$instance/<id>" with the time, at start
//     and every heartbeatInterval: one write per process per interval,
//     whatever the number of sessions (no write per message, keep-alive or
//     session). Every record names its writer (Owner) and the write's time
//     (Seen).
//   - a record written while connected ends its expiry after the later of
//     Seen and its owner's last heartbeat, plus livenessGrace (the owner may
//     have lived until just before its next heartbeat, and one heartbeat
//     may be lost): sessionRecord.deadline. A session taken over by another
//     instance has a record of that instance (written at the restore), whose
//     heartbeats go on.
//   - a sweep reads the whole queue at start (before the listeners: the
//     index of ids with a record) and every sweepInterval, and writes the
//     tombstones of the expired records (at most sweepBatch per sweep) and
//     of heartbeats that are stale and named by no live record.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

const (
	// instanceKeyPrefix: the last-value key of a gateway process's heartbeat.
	instanceKeyPrefix = "$instance/"
	heartbeatInterval = 5 * time.Second
	livenessGrace     = 2 * heartbeatInterval
	sweepInterval     = 5 * time.Minute
	sweepBatch        = 1000 // tombstones per sweep at most; the rest at the next one
)

// newInstanceID: this process's id in the records it writes.
func newInstanceID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

type heartbeat struct {
	V    int   `json:"v"`
	Seen int64 `json:"seen"`
}

// heartbeats: instance id -> its last heartbeat (unix seconds) among msgs
// (the last value per key; a tombstone removes it).
func heartbeats(msgs []Retained) map[string]int64 {
	out := map[string]int64{}
	for _, m := range msgs {
		id, ok := strings.CutPrefix(m.Topic, instanceKeyPrefix)
		if !ok {
			continue
		}
		var h heartbeat
		if len(m.Payload) == 0 || json.Unmarshal(m.Payload, &h) != nil {
			delete(out, id)
			continue
		}
		out[id] = h.Seen
	}
	return out
}

// PutHeartbeat writes the instance's heartbeat (seen 0: its tombstone).
func (s *RetainStore) PutHeartbeat(id string, seen int64) error {
	var body []byte
	if seen > 0 {
		body, _ = json.Marshal(heartbeat{V: 1, Seen: seen})
	}
	return s.putKey(instanceKeyPrefix+id, body)
}

// beat writes this instance's heartbeat; a failure is logged (the next
// one comes heartbeatInterval later).
func (b *Bridge) beat() {
	if err := b.Store.PutHeartbeat(b.instance, time.Now().Unix()); err != nil {
		b.Log.Info("heartbeat not written", "instance", b.instance, "error", err)
	}
}

// loadRecordIndex: the first sweep, once at start before the listeners
// (about 300 ms: the read's idle window; when the store does not answer,
// again every 5 s in the background); the heartbeats (the first one at
// once) and the later sweeps in the background. The sweep's index says
// which client ids have a live record: a clean start of such an id removes
// its record. Records other instances write later come into it through the
// takeover watcher (takeover.go); until the next sweep, those written
// while it was not attached do not.
func (b *Bridge) loadRecordIndex() {
	if b.Store == nil {
		return
	}
	ok := b.sweep(time.Now().Unix())
	go func() {
		for !ok {
			time.Sleep(5 * time.Second)
			ok = b.sweep(time.Now().Unix())
		}
	}()
	go b.keepAlive()
}

// keepAlive writes the heartbeats and runs the sweeps, each in a goroutine
// of its own (a long sweep does not delay a heartbeat; sweeps never overlap).
func (b *Bridge) keepAlive() {
	go func() {
		b.beat() // the first one now (a record names its write's time too: it needs none before)
		every(heartbeatInterval, b.beat)
	}()
	every(sweepInterval, func() { b.sweep(time.Now().Unix()) })
}

// every runs f every d (a tick missed while f runs is dropped).
func every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for range t.C {
		f()
	}
}

// sweep reads the records, indexes the ids with a live record and removes
// the expired records and the dead heartbeats; false when the store did
// not answer.
func (b *Bridge) sweep(now int64) bool {
	all, err := b.Store.readRecords()
	if err != nil {
		b.Log.Info("session records not read: tried again later", "error", err)
		return false
	}
	b.mu.Lock()
	held := make(map[string]bool, len(b.sessions))
	for id := range b.sessions {
		held[id] = true
	}
	b.mu.Unlock()
	plan := planSweep(all, now, b.instance, held, b.noticed)
	for _, id := range plan.live {
		b.know(id, plan.epochs[id], plan.owners[id])
	}
	for _, id := range plan.expired {
		b.Log.Info("session record expired: removed", "client", id)
		b.dropSession(id)
	}
	for _, id := range plan.deadInstances {
		if err := b.Store.PutHeartbeat(id, 0); err != nil {
			b.Log.Info("heartbeat of a gone instance not removed", "instance", id, "error", err)
		}
	}
	b.Log.Info("session records read", "records", len(plan.live), "expired", len(plan.expired),
		"gone_instances", len(plan.deadInstances))
	return true
}

// sweepPlan is what a sweep does.
type sweepPlan struct {
	live          []string          // client ids with a live record
	epochs        map[string]uint64 // their records' epochs
	owners        map[string]string // their writers when another instance ("": this one, or unnamed)
	expired       []string          // client ids whose record is to be removed (at most sweepBatch)
	deadInstances []string          // heartbeats to remove
}

// planSweep decides a sweep on the queue's messages at now: held are the
// ids this instance holds a session of (never expired here: mochi ends
// them), self this instance's id; noticed (client id -> unix seconds, kept
// between sweeps) gets the time a record without any liveness time (an
// earlier gateway's, written while connected) was first seen.
func planSweep(all []Retained, now int64, self string, held map[string]bool, noticed map[string]int64) sweepPlan {
	hb := heartbeats(all)
	last := map[string][]byte{}
	for _, m := range all {
		if id, ok := strings.CutPrefix(m.Topic, sessionKeyPrefix); ok {
			last[id] = m.Payload
		}
	}
	p := sweepPlan{epochs: map[string]uint64{}, owners: map[string]string{}}
	named := map[string]bool{}
	for id, body := range last {
		r, err := decodeRecord(body)
		if r == nil || err != nil {
			delete(noticed, id)
			continue // a tombstone, or not ours to judge
		}
		if r.Disconnected == 0 && r.Seen == 0 && hb[r.Owner] == 0 && noticed[id] == 0 {
			noticed[id] = now
		}
		if !held[id] && len(p.expired) < sweepBatch && r.expired(now, hb, noticed[id]) {
			p.expired = append(p.expired, id)
			delete(noticed, id)
			continue
		}
		p.live = append(p.live, id)
		p.epochs[id] = r.Epoch
		if r.Owner != self {
			p.owners[id] = r.Owner
		}
		if r.Disconnected == 0 {
			named[r.Owner] = true
		}
	}
	for id, seen := range hb {
		if id != self && !named[id] && seen+int64(livenessGrace/time.Second) < now {
			p.deadInstances = append(p.deadInstances, id)
		}
	}
	return p
}
