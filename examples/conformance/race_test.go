//go:build race

package main

// raceEnabled makes TestMain build the server with the race detector too.
const raceEnabled = true
