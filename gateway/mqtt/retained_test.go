package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/go-amqp"
)

func TestMatchingKeepsTheLastPerTopicAndDropsTombstones(t *testing.T) {
	all := []Retained{{"t/a", []byte("1"), 1, nil}, {"t/b", []byte("b"), 0, nil}, {"t/a", []byte("2"), 1, nil},
		{"t/b", nil, 0, nil}, {"u/a", []byte("u"), 1, nil}, {"t/c/d", []byte("deep"), 1, nil}}
	got := map[string]string{}
	for _, m := range matching(all, "t/+") {
		got[m.Topic] = string(m.Payload)
	}
	if len(got) != 1 || got["t/a"] != "2" {
		t.Fatalf("t/+: %v", got)
	}
	if n := len(matching(all, "#")); n != 3 {
		t.Fatalf("#: %d messages, want 3 (t/a, u/a, t/c/d)", n)
	}
	if n := len(matching(all, "t/b")); n != 0 {
		t.Fatalf("a cleared topic came back: %d", n)
	}
}

// A link's failure (a rejected retained message, a routed link the old
// broker detached) leaves the store's shared connection open for the reads
// in flight; the end of the connection or its session, or a timeout, drops
// it (the next operation dials).
func TestOnlyTheEndOfTheConnectionDropsIt(t *testing.T) {
	linkFailures := []error{
		&amqp.LinkError{RemoteErr: &amqp.Error{Condition: "qd:routed-link-lost"}},
		&amqp.Error{Condition: amqp.ErrCondNotFound},
		&notAccepted{&amqp.StateRejected{}},
		fmt.Errorf("retained store: receiver on $mqtt/s/retained: %w", &amqp.LinkError{}),
	}
	connFailures := []error{
		&amqp.ConnError{},
		&amqp.SessionError{},
		fmt.Errorf("retained store: read: %w", &amqp.ConnError{}),
		fmt.Errorf("retained store: read: %w", context.DeadlineExceeded),
	}
	for _, err := range linkFailures {
		sess, sender := new(amqp.Session), new(amqp.Sender)
		s := &RetainStore{sess: sess, sender: sender}
		s.drop(sess, nil, err)
		if s.sess != sess || s.sender != sender {
			t.Errorf("%T %v: the connection or the queue's sender was dropped", err, err)
		}
	}
	for _, err := range connFailures {
		sess := new(amqp.Session)
		s := &RetainStore{sess: sess, sender: new(amqp.Sender)}
		s.drop(sess, nil, err)
		if s.sess != nil || s.sender != nil {
			t.Errorf("%T %v: the connection was kept", err, err)
		}
	}
	// a failure on a connection another caller already replaced changes nothing
	sess := new(amqp.Session)
	s := &RetainStore{sess: sess}
	s.drop(new(amqp.Session), nil, &amqp.ConnError{})
	if s.sess != sess {
		t.Errorf("the replacing connection was dropped")
	}
}

func TestASenderClosedHereIsNoFailedAttempt(t *testing.T) {
	if !closedHere(&amqp.LinkError{}) || !closedHere(fmt.Errorf("send: %w", &amqp.LinkError{})) {
		t.Errorf("a sender this process closed counts as a failed attempt")
	}
	for _, err := range []error{
		&amqp.LinkError{RemoteErr: &amqp.Error{Condition: "qd:routed-link-lost"}}, // the peer detached it
		&notAccepted{&amqp.StateRejected{}},
		&amqp.ConnError{},
		context.DeadlineExceeded,
	} {
		if closedHere(err) {
			t.Errorf("%T %v: taken for a sender closed here", err, err)
		}
	}
}

func TestServiceConfig(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	_ = os.WriteFile(pw, []byte("s3cret\n"), 0o640)
	open := filepath.Join(dir, "open")
	_ = os.WriteFile(open, []byte("s3cret\n"), 0o644)
	base := `"space": "s", "routers": ["127.0.0.1:5671"], "table_file": "/t.json", "listen_plain": ":1883"`
	svc := `"service_routers": ["127.0.0.1:5680"], "service_user": "u", "service_password_file": "` + pw + `"`
	cases := map[string]string{
		`{` + base + `, "service_user": "u"}`:                                                        "service_routers",
		`{` + base + `, "service_routers": ["x"], "service_user": "u"}`:                              "service_routers[0]",
		`{` + base + `, "service_routers": ["h:1"], "retained_address": "$mqtt/s/r"}`:                "service_user",
		`{` + base + `, "service_routers": ["h:1"], "service_user": "u"}`:                            "service_password_file",
		`{` + base + `, ` + svc + `}`:                                                                "retained_address",
		`{` + base + `, ` + svc + `, "retained_address": "s/retained"}`:                              "retained_address",
		`{` + base + `, ` + strings.Replace(svc, pw, open, 1) + `, "retained_address": "$mqtt/s/r"}`: "0644",
	}
	for text, want := range cases {
		p := filepath.Join(dir, "c.json")
		_ = os.WriteFile(p, []byte(text), 0o600)
		_, err := LoadConfig(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error naming %q, got %v", text, want, err)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the password is in the error: %v", err)
		}
	}
	p := filepath.Join(dir, "ok.json")
	_ = os.WriteFile(p, []byte(`{`+base+`, `+svc+`, "retained_address": "$mqtt/s/retained"}`), 0o600)
	c, err := LoadConfig(p)
	if err != nil || c.servicePassword != "s3cret" {
		t.Fatalf("ok config: %v", err)
	}
}
