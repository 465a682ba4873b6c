//go:build nogateway

package gateway

// Embedded reports whether this binary carries the gateway. The tag
// nogateway (the worker image's build) leaves versitygw and everything it
// links out of the binary; Start then fails with ErrNotEmbedded.
const Embedded = false

// MaybeRunChild returns at once: without the gateway, Start never starts a
// child.
func MaybeRunChild() {}
