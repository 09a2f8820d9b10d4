// Package archtest holds the test that keeps the import graph one-way: transports over
// the runtime, the runtime over the provider interface (never a family), families and
// the repository over generated contracts and internal leaves.
package archtest
