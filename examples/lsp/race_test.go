//go:build race

package main

// raceBuild makes TestMain build the server with the race detector as well.
const raceBuild = true
