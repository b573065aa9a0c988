package tsgen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// TSC is where the TypeScript compiler is installed (browser/test's
// package-lock.json pins it; .ci/run installs it), relative to the
// repository's root.
const TSC = "browser/test/node_modules/typescript/bin/tsc"

// Tsconfig is the configuration the checks use: strict, JavaScript
// checked as TypeScript, nothing emitted.
const Tsconfig = `{
  "compilerOptions": {
    "strict": true, "noEmit": true, "allowJs": true, "checkJs": true,
    "target": "es2022", "module": "es2022", "moduleResolution": "bundler",
    "lib": ["es2022", "dom", "dom.iterable"], "types": []
  },
  "files": [%s]
}
`

// RunTSC writes a tsconfig.json naming files into dir and runs tsc (at
// tsc, a path) on it with node, bounded by two minutes and ctx; it
// returns tsc's output and an error if tsc found errors or failed.
func RunTSC(ctx context.Context, tsc, dir string, files ...string) ([]byte, error) {
	list := ""
	for i, f := range files {
		if i > 0 {
			list += ", "
		}
		list += fmt.Sprintf("%q", f)
	}
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), fmt.Appendf(nil, Tsconfig, list), 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", tsc, "-p", dir)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, fmt.Errorf("tsc did not finish: %w", ctx.Err())
	}
	return out, err
}
