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
