// Package msgsize holds the default cap on an incoming message that the
// transports share, so that ws and stdio cannot drift apart. ws builds for
// js/wasm and must not import stdio, hence a package of its own.
package msgsize

// Default is the cap in bytes on an incoming message when a transport's
// Options.MaxMessageSize is zero: 32 MiB. (A negative one means no cap.)
const Default = 32 << 20
