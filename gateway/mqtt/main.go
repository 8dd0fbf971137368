package main

import (
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	amqp "github.com/Azure/go-amqp"
	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:1883", "MQTT listener (plain TCP in the prototype)")
	router := flag.String("router", "127.0.0.1:5672", "the space's router listener host:port")
	verbose := flag.Bool("v", false, "log every refusal (level info)")
	flag.Parse()
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	server := mqtt.New(&mqtt.Options{InlineClient: true, Logger: log})
	b := &Bridge{Router: *router, Log: log, Server: server, links: map[string]*link{},
		subs: map[string]*amqp.Receiver{}, Timeout: 10 * time.Second}
	if err := server.AddHook(b, nil); err != nil {
		log.Error("hook", "error", err)
		os.Exit(1)
	}
	if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "mqtt", Address: *listen})); err != nil {
		log.Error("listener", "error", err)
		os.Exit(1)
	}
	go func() {
		if err := server.Serve(); err != nil {
			log.Error("serve", "error", err)
			os.Exit(1)
		}
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = server.Close()
}
