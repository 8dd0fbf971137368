package main

import (
	"context"
	"log/slog"

	"github.com/mochi-mqtt/server/v2/packets"
)

// secretKeys are attributes never written: mochi logs whole packets
// (payloads, CONNECT passwords) on some failures.
var secretKeys = map[string]bool{"pk": true, "packet": true, "payload": true, "password": true, "pkv": true}

// filterHandler drops secret attributes and any packets.Packet value before
// the wrapped handler formats the record.
type filterHandler struct{ next slog.Handler }

func keep(a slog.Attr) bool {
	if secretKeys[a.Key] {
		return false
	}
	switch a.Value.Any().(type) {
	case packets.Packet, *packets.Packet, []byte:
		return false
	}
	return true
}

func (h filterHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h filterHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if keep(a) {
			out.AddAttrs(a)
		}
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h filterHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var kept []slog.Attr
	for _, a := range as {
		if keep(a) {
			kept = append(kept, a)
		}
	}
	return filterHandler{h.next.WithAttrs(kept)}
}

func (h filterHandler) WithGroup(name string) slog.Handler {
	return filterHandler{h.next.WithGroup(name)}
}
