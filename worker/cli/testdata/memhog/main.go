// Command memhog allocates and touches memory until the runtime cannot
// get more: under a data limit it ends as Go programs do, with "fatal
// error: runtime: out of memory" followed by kilobytes of goroutine
// stacks.
package main

func main() {
	var kept [][]byte
	for {
		b := make([]byte, 1<<20)
		for i := range b {
			if i%4096 == 0 {
				b[i] = 1
			}
		}
		kept = append(kept, b)
	}
}
