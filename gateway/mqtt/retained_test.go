package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMatchingKeepsTheLastPerTopicAndDropsTombstones(t *testing.T) {
	all := []Retained{{"t/a", []byte("1"), 1}, {"t/b", []byte("b"), 0}, {"t/a", []byte("2"), 1},
		{"t/b", nil, 0}, {"u/a", []byte("u"), 1}, {"t/c/d", []byte("deep"), 1}}
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
