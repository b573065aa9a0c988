//go:build !unix

package stdio

func makeStdinBlocking() {}
