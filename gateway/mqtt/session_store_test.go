package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSessionRecordRoundTripsWithoutThePassword(t *testing.T) {
	r := &sessionRecord{User: "alice", Expiry: 300, Disconnected: 1700000000, Epoch: 3, Qos2: []uint16{7, 65535},
		Subs: []recordSub{{Filter: "q1", Qos: 1}, {Filter: "t/+", Qos: 2, NoLoc: true, RAP: true, RH: 1}}}
	body := encodeRecord(r)
	if strings.Contains(string(body), "password") {
		t.Fatalf("a record names a password: %s", body)
	}
	got, err := decodeRecord(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "alice" || got.Expiry != 300 || got.Disconnected != 1700000000 || got.Epoch != 3 || len(got.Subs) != 2 ||
		!slices.Equal(got.Qos2, []uint16{7, 65535}) {
		t.Fatalf("decoded %+v", got)
	}
	if s := got.Subs[1]; s.Filter != "t/+" || s.Qos != 2 || !s.NoLoc || !s.RAP || s.RH != 1 {
		t.Fatalf("options lost: %+v", s)
	}
}

func TestSessionRecordTombstoneAndBadRecords(t *testing.T) {
	if r, err := decodeRecord(nil); r != nil || err != nil {
		t.Fatalf("a tombstone decoded as %v, %v", r, err)
	}
	if _, err := decodeRecord([]byte("{not json")); err == nil {
		t.Fatal("garbage decoded")
	}
	if _, err := decodeRecord([]byte(`{"v":2,"user":"alice"}`)); err == nil {
		t.Fatal("a record of another version was taken")
	}
}

func TestSessionRecordExpiry(t *testing.T) {
	r := &sessionRecord{Expiry: 10, Disconnected: 1000, Seen: 1000, Owner: "a"}
	if r.expired(1010, nil, 0) || !r.expired(1011, map[string]int64{"a": 5000}, 0) {
		t.Fatal("a disconnected record's expiry is the disconnect time plus the interval")
	}
	if (&sessionRecord{Expiry: 0, Disconnected: 0}).expired(1<<40, nil, 0) {
		t.Fatal("a record with no liveness time and not noticed has no deadline")
	}
}

// grace: livenessGrace in seconds.
var grace = int64(livenessGrace / time.Second)

func TestConnectedRecordExpiresFromItsOwnersLastHeartbeat(t *testing.T) {
	r := &sessionRecord{Expiry: 10, Seen: 1000, Owner: "a"}
	dead := map[string]int64{"a": 1500} // the owner's last heartbeat: killed after it
	if d := r.deadline(dead, 0); d != 1500+grace+10 {
		t.Fatalf("deadline %d, want the last heartbeat + grace + expiry", d)
	}
	if r.expired(1500+grace+10, dead, 0) || !r.expired(1500+grace+11, dead, 0) {
		t.Fatal("expiry counts from the owner's last heartbeat")
	}
	if r.expired(1<<40, map[string]int64{"a": 1 << 40}, 0) {
		t.Fatal("a record of a live owner expired")
	}
	if d := r.deadline(nil, 0); d != 1000+grace+10 {
		t.Fatalf("deadline %d without the owner's heartbeat, want the record's write + grace + expiry", d)
	}
	if d := r.deadline(map[string]int64{"a": 900}, 0); d != 1000+grace+10 {
		t.Fatalf("deadline %d: an older heartbeat than the record counted", d)
	}
}

func TestOldFormatRecordsAreRead(t *testing.T) {
	// a record of the gateway before the liveness fields, written while connected
	old := []byte(`{"v":1,"user":"alice","expiry":10,"disconnected":0,"epoch":2,"subs":[{"filter":"q1","qos":1}]}`)
	r, err := decodeRecord(old)
	if err != nil || r.User != "alice" || r.Epoch != 2 || len(r.Subs) != 1 || r.Seen != 0 || r.Owner != "" {
		t.Fatalf("decoded %+v, %v", r, err)
	}
	if r.expired(1<<40, map[string]int64{"": 5}, 0) {
		t.Fatal("an old record not noticed by a sweep expired")
	}
	if r.expired(1000+grace+10, nil, 1000) || !r.expired(1000+grace+11, nil, 1000) {
		t.Fatal("an old record counts from the time a sweep noticed it")
	}
	gone := []byte(`{"v":1,"user":"alice","expiry":10,"disconnected":1000,"epoch":0,"subs":null}`)
	if r, _ := decodeRecord(gone); r == nil || r.expired(1010, nil, 0) || !r.expired(1011, nil, 0) {
		t.Fatal("an old disconnected record's expiry changed")
	}
	// and a new record stays readable by the earlier gateway (same version, known fields)
	var earlier struct {
		V            int    `json:"v"`
		User         string `json:"user"`
		Disconnected int64  `json:"disconnected"`
	}
	if err := json.Unmarshal(encodeRecord(&sessionRecord{User: "a", Seen: 7, Owner: "x"}), &earlier); err != nil ||
		earlier.V != 1 || earlier.User != "a" {
		t.Fatalf("%+v, %v", earlier, err)
	}
}

func rec(id string, r *sessionRecord) Retained {
	if r == nil {
		return Retained{Topic: sessionKeyPrefix + id}
	}
	return Retained{Topic: sessionKeyPrefix + id, Payload: encodeRecord(r)}
}

func beatOf(id string, seen int64) Retained {
	body, _ := json.Marshal(heartbeat{V: 1, Seen: seen})
	if seen == 0 {
		body = nil
	}
	return Retained{Topic: instanceKeyPrefix + id, Payload: body}
}

func TestSweepRemovesExpiredRecordsAndGoneInstances(t *testing.T) {
	now := int64(10000)
	all := []Retained{
		beatOf("dead", 1000), beatOf("alive", now-5), beatOf("self", 1000), beatOf("gone", 100),
		beatOf("dead-but-named", 9000), {"t/a", []byte("x"), 1, nil},
		rec("killed", &sessionRecord{User: "u", Expiry: 60, Seen: 900, Owner: "dead"}),
		rec("offline", &sessionRecord{User: "u", Expiry: 60, Disconnected: 1000, Seen: 1000, Owner: "alive"}),
		rec("connected", &sessionRecord{User: "u", Expiry: 60, Seen: 900, Owner: "alive"}),
		rec("recent", &sessionRecord{User: "u", Expiry: 3600, Seen: 8000, Owner: "dead-but-named"}),
		rec("held", &sessionRecord{User: "u", Expiry: 1, Disconnected: 5, Owner: "self"}),
		rec("old", &sessionRecord{User: "u", Expiry: 60}),
		rec("cleared", &sessionRecord{User: "u", Expiry: 1, Disconnected: 5}), rec("cleared", nil),
		beatOf("tombstoned", 50), beatOf("tombstoned", 0),
	}
	noticed := map[string]int64{}
	p := planSweep(all, now, "self", map[string]bool{"held": true}, noticed)
	sort.Strings(p.live)
	sort.Strings(p.expired)
	sort.Strings(p.deadInstances)
	if fmt.Sprint(p.expired) != "[killed offline]" {
		t.Fatalf("expired %v", p.expired)
	}
	if fmt.Sprint(p.live) != "[connected held old recent]" {
		t.Fatalf("live %v", p.live)
	}
	if fmt.Sprint(p.deadInstances) != "[dead gone]" {
		t.Fatalf("gone instances %v (self, a live one and one a live record names stay)", p.deadInstances)
	}
	if noticed["old"] != now || len(noticed) != 1 {
		t.Fatalf("noticed %v", noticed)
	}
	// the old record ends its expiry (+ grace) after the sweep that noticed it
	later := planSweep(all, now+grace+60, "self", nil, noticed)
	if !slices.Contains(later.live, "old") {
		t.Fatalf("an old record expired early: %+v", later)
	}
	later = planSweep(all, now+grace+61, "self", nil, noticed)
	if !slices.Contains(later.expired, "old") || len(noticed) != 0 {
		t.Fatalf("an old record did not expire: %+v, %v", later, noticed)
	}
}

func TestSweepIsBounded(t *testing.T) {
	var all []Retained
	for i := 0; i < sweepBatch+500; i++ {
		all = append(all, rec(fmt.Sprint("c", i), &sessionRecord{User: "u", Expiry: 1, Disconnected: 5}))
	}
	p := planSweep(all, 100, "self", nil, map[string]int64{})
	if len(p.expired) != sweepBatch || len(p.live) != 500 {
		t.Fatalf("%d expired, %d left for the next sweep", len(p.expired), len(p.live))
	}
}

func TestSessionTakenOverIsNotExpired(t *testing.T) {
	now := int64(10000)
	// A held the client (record at 1000) and was killed at 1500; the
	// client came to B at 1200: B's restore wrote the record as B's, and
	// B's heartbeats go on.
	hb := map[string]int64{"A": 1500, "B": now - 3}
	takenOver := &sessionRecord{User: "u", Expiry: 60, Seen: 1200, Owner: "B", Epoch: 1}
	if takenOver.expired(now, hb, now) {
		t.Fatal("a session taken over by a live instance expired")
	}
	p := planSweep([]Retained{beatOf("A", 1500), beatOf("B", now-3), rec("c", takenOver)}, now, "C", nil,
		map[string]int64{})
	if len(p.expired) != 0 || fmt.Sprint(p.deadInstances) != "[A]" {
		t.Fatalf("%+v", p)
	}
	// a CONNECT on B of a session A still holds (A alive: heartbeats), its
	// record written long ago: restored, not expired
	held := &sessionRecord{User: "u", Expiry: 60, Seen: 10, Owner: "A"}
	if held.expired(now, map[string]int64{"A": now - 10}, now) {
		t.Fatal("a record of a live instance expired at a takeover")
	}
}

func TestSessionSelectorQuotesTheID(t *testing.T) {
	got := sessionSelector("it's")
	want := `mqtt_topic = '$session/it''s' OR mqtt_topic LIKE '$instance/%'`
	if got != want {
		t.Fatalf("%s", got)
	}
}

func TestRetainedReadsSkipSessionRecords(t *testing.T) {
	all := []Retained{{"t/a", []byte("1"), 1, nil}, {sessionKeyPrefix + "dev-1", encodeRecord(&sessionRecord{User: "a"}), 2, nil}}
	for _, f := range []string{"#", "+/+", "$session/#", "$session/dev-1"} {
		if got := matching(all, f); len(got) > 1 || (len(got) == 1 && got[0].Topic != "t/a") {
			t.Fatalf("%s: a session record came out as retained: %v", f, got)
		}
	}
}

// benchRecords: the session records in the store of BenchmarkSessionLookup.
const benchRecords = 10000

var benchFill sync.Once

// BenchmarkSessionLookup: a CONNECT's read of one record in a store that
// holds benchRecords records, keyed (Session: the broker's selector on the
// key) and as before (the whole queue read, the key's last message taken).
// It needs a real store: MQTT_BENCH_CONFIG names a gateway configuration
// (its service connection and retained queue); skipped without one
// (docs/benchmarks.md, tests/integration/bench_mqtt_session_lookup.py).
func BenchmarkSessionLookup(b *testing.B) {
	path := os.Getenv("MQTT_BENCH_CONFIG")
	if path == "" {
		b.Skip("MQTT_BENCH_CONFIG: no store")
	}
	c, err := LoadConfig(path)
	if err != nil {
		b.Fatal(err)
	}
	rtls, err := routerTLS(c)
	if err != nil {
		b.Fatal(err)
	}
	s := &RetainStore{Routers: c.ServiceRouters, Address: c.RetainedAddress, User: c.ServiceUser,
		Password: c.servicePassword, TLS: rtls, Log: slog.Default(), Timeout: time.Minute}
	benchFill.Do(func() { fillRecords(b, s) })
	id := func(i int) string { return fmt.Sprintf("bench-%05d", (i*7919)%benchRecords) }
	b.Run("keyed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if r, _, _, err := s.Session(id(i)); err != nil || r == nil {
				b.Fatalf("%s: %v, %v", id(i), r, err)
			}
		}
	})
	b.Run("whole-queue", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
			all, err := s.readSelected(ctx, "") // the whole queue, as before the keyed read
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			var body []byte
			for _, m := range all {
				if m.Topic == sessionKeyPrefix+id(i) {
					body = m.Payload
				}
			}
			if r, err := decodeRecord(body); err != nil || r == nil {
				b.Fatalf("%s: %v, %v (%d messages)", id(i), r, err, len(all))
			}
		}
	})
}

// fillRecords writes the benchmark's records (16 writers).
func fillRecords(b *testing.B, s *RetainStore) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < benchRecords; i += 16 {
				r := &sessionRecord{User: "bench", Expiry: 3600, Seen: time.Now().Unix(), Owner: "bench",
					Subs: []recordSub{{Filter: "q1", Qos: 1}, {Filter: "t/+", Qos: 2}}}
				if err := s.PutSession(fmt.Sprintf("bench-%05d", i), r); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.Logf("%d records written in %v", benchRecords, time.Since(start))
}

// A sweep indexes each live record with its epoch (a clean start of the id
// on this instance writes a tombstone above it).
func TestSweepIndexesTheEpochs(t *testing.T) {
	p := planSweep([]Retained{rec("moved", &sessionRecord{User: "u", Expiry: 60, Disconnected: 100, Epoch: 5,
		Owner: "other"}), rec("new", &sessionRecord{User: "u", Expiry: 60, Disconnected: 100, Owner: "self"})},
		110, "self", nil, map[string]int64{})
	if p.epochs["moved"] != 5 || p.epochs["new"] != 0 || len(p.live) != 2 {
		t.Fatalf("epochs %v, live %v", p.epochs, p.live)
	}
	if p.owners["moved"] != "other" || p.owners["new"] != "" {
		t.Fatalf("owners %v (this instance's own records name none)", p.owners)
	}
}
