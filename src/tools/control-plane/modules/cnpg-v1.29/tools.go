//go:build tools

// Package tools pins CloudNativePG's operator binary so that `go mod tidy` keeps its dependencies; the build
// tag keeps this file out of every ordinary build.
package tools

import _ "github.com/cloudnative-pg/cloudnative-pg/cmd/manager"
