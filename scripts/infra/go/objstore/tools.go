//go:build tools

// Package tools names the commands scripts/infra/kfp-build.sh builds from this module.
package tools

import (
	_ "github.com/seaweedfs/seaweedfs/weed"
)
