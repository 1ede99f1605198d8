// Command madvfree reports how this Go runtime hands freed heap pages back
// to Linux: it fills 64 MiB of heap, drops it, returns it with
// debug.FreeOSMemory and prints the process's resident and lazily freed
// kilobytes (from /proc/self/smaps_rollup) as "rss=N lazyfree=N". Pages
// returned with MADV_FREE stay resident as LazyFree until the kernel needs
// them; MADV_DONTNEED drops them at once. The root package's
// TestBuildReturnsMemoryWithMadvFree builds it with the Makefile's flags.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

var sink [][]byte

func main() {
	for range 16 {
		b := make([]byte, 4<<20)
		for i := range b {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	sink = nil
	debug.FreeOSMemory()
	rollup, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kb := map[string]int{}
	for _, line := range strings.Split(string(rollup), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[0] == "Rss:" || f[0] == "LazyFree:") {
			kb[f[0]], _ = strconv.Atoi(f[1])
		}
	}
	fmt.Printf("rss=%d lazyfree=%d\n", kb["Rss:"], kb["LazyFree:"])
}
