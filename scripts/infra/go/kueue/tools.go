//go:build tools

// Package tools names the commands scripts/infra/k8s-build-current.sh builds from this module.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
