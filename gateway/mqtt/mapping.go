package main

import "strings"

// TopicToAddress maps an MQTT topic name to the address of the space. The
// rule of docs/mqtt-design.md: the same name (EnMasse's rule). The space's
// router listener adds the tenant prefix "<space>/", so a topic can never
// name another space's address.
func TopicToAddress(topic string) string { return topic }

// ValidTopicName: a name to publish to has no wildcard and is not empty
// (MQTT 3.1.1 4.7.3); levels may be empty.
func ValidTopicName(topic string) bool {
	return topic != "" && !strings.ContainsAny(topic, "+#\x00")
}
