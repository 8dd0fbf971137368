package main

import (
	"strings"
	"testing"
)

func TestSessionRecordRoundTripsWithoutThePassword(t *testing.T) {
	r := &sessionRecord{User: "alice", Expiry: 300, Disconnected: 1700000000, Epoch: 3,
		Subs: []recordSub{{Filter: "q1", Qos: 1}, {Filter: "t/+", Qos: 2, NoLoc: true, RAP: true, RH: 1}}}
	body := encodeRecord(r)
	if strings.Contains(string(body), "password") {
		t.Fatalf("a record names a password: %s", body)
	}
	got, err := decodeRecord(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.User != "alice" || got.Expiry != 300 || got.Disconnected != 1700000000 || got.Epoch != 3 || len(got.Subs) != 2 {
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
	r := &sessionRecord{Expiry: 10, Disconnected: 1000}
	if r.expired(1010) || !r.expired(1011) {
		t.Fatal("expiry is the disconnect time plus the interval")
	}
	if (&sessionRecord{Expiry: 0, Disconnected: 0}).expired(1 << 40) {
		t.Fatal("a record written while connected has no deadline")
	}
}

func TestRetainedReadsSkipSessionRecords(t *testing.T) {
	all := []Retained{{"t/a", []byte("1"), 1}, {sessionKeyPrefix + "dev-1", encodeRecord(&sessionRecord{User: "a"}), 2}}
	for _, f := range []string{"#", "+/+", "$session/#", "$session/dev-1"} {
		if got := matching(all, f); len(got) > 1 || (len(got) == 1 && got[0].Topic != "t/a") {
			t.Fatalf("%s: a session record came out as retained: %v", f, got)
		}
	}
}

func TestRecordIDsTakeTheLastValuePerClientID(t *testing.T) {
	all := []Retained{{sessionKeyPrefix + "a", []byte("{}"), 0}, {"t/a", []byte("x"), 1},
		{sessionKeyPrefix + "b", []byte("{}"), 0}, {sessionKeyPrefix + "a", nil, 0}}
	got := recordIDs(all)
	if len(got) != 2 || got["a"] || !got["b"] {
		t.Fatalf("%v", got)
	}
}
