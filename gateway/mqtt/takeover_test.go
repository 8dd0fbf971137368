package main

import "testing"

// An instance lets a session go only for a record of another owner with a
// later epoch: its own restore's record, and a stale one (a takeover it
// made since wrote a later epoch), change nothing.
func TestOnlyAnotherOwnersLaterRecordTakesTheSession(t *testing.T) {
	cases := []struct {
		name  string
		epoch uint64
		rec   sessionRecord
		want  bool
	}{
		{"another instance restored it", 3, sessionRecord{Owner: "b", Epoch: 4}, true},
		{"a session made here, never stored", 0, sessionRecord{Owner: "b", Epoch: 1}, true},
		{"this instance's own restore", 3, sessionRecord{Owner: "a", Epoch: 4}, false},
		{"taken back since", 5, sessionRecord{Owner: "b", Epoch: 4}, false},
		{"the same epoch, a greater instance id", 4, sessionRecord{Owner: "b", Epoch: 4}, true},
		{"the same epoch, a smaller instance id", 4, sessionRecord{Owner: "0", Epoch: 4}, false},
	}
	for _, c := range cases {
		if got := takenFrom("a", c.epoch, &c.rec); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The watcher indexes other instances' records with the highest epoch
// seen (a clean start here then writes a tombstone above it), unindexes an
// id another instance's clean start removed, and ignores this instance's
// own writes and tombstones that name no instance.
func TestTheWatcherKeepsTheIndexOfRecordsAndEpochs(t *testing.T) {
	b := &Bridge{instance: "a"}
	epochOf := func(id string) (uint64, bool) {
		e, ok := b.lookup(id)
		return e.epoch, ok
	}
	b.noteRecord("dev", encodeRecord(&sessionRecord{User: "u", Owner: "b", Epoch: 2}), map[string]any{newKey: true})
	if e, ok := epochOf("dev"); !ok || e != 2 {
		t.Fatalf("another instance's new record: indexed %v with epoch %d, want epoch 2", ok, e)
	}
	b.noteRecord("dev", encodeRecord(&sessionRecord{User: "u", Owner: "c", Epoch: 1}), map[string]any{newKey: true})
	if e, _ := epochOf("dev"); e != 2 {
		t.Fatalf("a lower epoch replaced the highest known: %d", e)
	}
	b.noteRecord("own", encodeRecord(&sessionRecord{User: "u", Owner: "a", Epoch: 7}), map[string]any{newKey: true})
	if _, ok := epochOf("own"); ok {
		t.Fatal("this instance's own write was indexed by the watcher")
	}
	if e, _ := b.lookup("dev"); e.owner != "b" {
		t.Fatalf("the index names %q as the writer, want b", e.owner)
	}
	b.know("dev", 2, "") // a sweep's read of the same record
	if e, _ := b.lookup("dev"); e.owner != "b" {
		t.Fatalf("a sweep's read replaced the writer the watcher saw: %q", e.owner)
	}
	b.noteRecord("dev", nil, map[string]any{takeoverKey: true})
	if _, ok := epochOf("dev"); !ok {
		t.Fatal("a tombstone naming no instance unindexed the id")
	}
	b.noteRecord("dev", nil, map[string]any{takeoverKey: true, ownerKey: "a", epochKey: int64(3)})
	if _, ok := epochOf("dev"); !ok {
		t.Fatal("this instance's own clean start was acted on by its watcher")
	}
	b.noteRecord("dev", nil, map[string]any{takeoverKey: true, ownerKey: "b", epochKey: int64(3)})
	if _, ok := epochOf("dev"); ok {
		t.Fatal("another instance's clean start left the id indexed")
	}
}

// A clean start's tombstone has no body: its instance and epoch tell it
// from an earlier one in the watcher's first read.
func TestTombstonesOfCleanStartsHaveSignaturesOfTheirOwn(t *testing.T) {
	one := signature(nil, map[string]any{ownerKey: "b", epochKey: int64(1)})
	two := signature(nil, map[string]any{ownerKey: "b", epochKey: int64(2)})
	other := signature(nil, map[string]any{ownerKey: "c", epochKey: int64(1)})
	if one == two || one == other || one == signature([]byte("x"), nil) {
		t.Fatalf("signatures collide: %q %q %q", one, two, other)
	}
	if rec := signature([]byte(`{"v":1}`), map[string]any{ownerKey: "b"}); rec != `{"v":1}` {
		t.Fatalf("a record's signature is not its body: %q", rec)
	}
}

// A clean start on another instance ends the session this one holds: its
// tombstone's epoch is above the highest that instance knew.
func TestACleanStartElsewhereTakesTheSession(t *testing.T) {
	if !takenFrom("a", 3, &sessionRecord{Owner: "b", Epoch: 4}) {
		t.Fatal("a clean start above the held epoch did not take the session")
	}
	if !takenFrom("a", 0, &sessionRecord{Owner: "b", Epoch: 1}) {
		t.Fatal("a clean start elsewhere of a session never restored did not take it")
	}
}

// The epoch of a clean start's tombstone is read whatever integer type the
// broker gives it back as; anything else is no epoch.
func TestEpochPropertyTypes(t *testing.T) {
	for _, v := range []any{int64(7), int32(7), 7, uint64(7), uint32(7)} {
		if e, ok := epochProp(map[string]any{epochKey: v}); !ok || e != 7 {
			t.Errorf("%T: %d %v", v, e, ok)
		}
	}
	for _, v := range []any{int64(-1), "7", nil, 7.0} {
		if _, ok := epochProp(map[string]any{epochKey: v}); ok {
			t.Errorf("%T %v taken as an epoch", v, v)
		}
	}
}
