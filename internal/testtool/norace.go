//go:build !race

package testtool

// Race reports whether the race detector is on, under which heap figures are inflated.
const Race = false
