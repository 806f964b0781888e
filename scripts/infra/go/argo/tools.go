//go:build tools

// Package tools names the commands scripts/infra/kfp-build.sh builds from this module.
package tools

import (
	_ "github.com/argoproj/argo-workflows/v4/cmd/argoexec"
	_ "github.com/argoproj/argo-workflows/v4/cmd/workflow-controller"
)
