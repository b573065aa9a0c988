//go:build race

package main

// raceEnabled makes TestMain build the agent with the race detector too.
const raceEnabled = true
