module github.com/enmasse-messaging/bench/mqtt/loadgen

go 1.25

require (
	github.com/Azure/go-amqp v1.7.0
	github.com/eclipse/paho.mqtt.golang v1.5.1
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	golang.org/x/net v0.44.0 // indirect
	golang.org/x/sync v0.17.0 // indirect
)
