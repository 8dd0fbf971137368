// amqp-count receives n messages from an address and prints the rate
// between the first and the last message (the benchmark's AMQP consumer).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	amqp "github.com/Azure/go-amqp"
)

func main() {
	url := flag.String("url", "amqp://127.0.0.1:5672", "router")
	address := flag.String("address", "bench", "source address")
	n := flag.Int("n", 10000, "messages to receive")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	ready := flag.String("ready", "", "file written once the receiver is attached")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := amqp.Dial(ctx, *url, &amqp.ConnOptions{SASLType: amqp.SASLTypeAnonymous()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sess, _ := conn.NewSession(ctx, nil)
	r, err := sess.NewReceiver(ctx, *address, &amqp.ReceiverOptions{Credit: 1000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *ready != "" {
		_ = os.WriteFile(*ready, []byte("ok\n"), 0o644)
	}
	var first time.Time
	got := 0
	for got < *n {
		m, err := r.Receive(ctx, nil)
		if err != nil {
			break
		}
		if got == 0 {
			first = time.Now()
		}
		got++
		_ = r.AcceptMessage(ctx, m)
	}
	secs := time.Since(first).Seconds()
	fmt.Printf("received=%d seconds=%.3f rate=%.0f\n", got, secs, float64(got)/secs)
	if got < *n {
		os.Exit(2)
	}
}
