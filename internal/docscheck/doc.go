// Package docscheck holds TestDocs, which keeps the names in the docs true:
// see docscheck_test.go for the rule.
package docscheck
