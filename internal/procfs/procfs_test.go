package procfs

import (
	"slices"
	"testing"
)

// TestTree: a tree is the root's descendants by parent links and its process group's
// members with theirs, each once, whatever the table's order or cycles.
func TestTree(t *testing.T) {
	// 1 is init; 10 the root with a child 11 and grandchild 12; 20 left the tree by
	// parent links but stayed in 10's process group, and its child 21 is in its own
	// group; 30 is unrelated; 40 and 41 are each other's parent.
	all := []Process{
		{PID: 1, PPID: 0, Pgrp: 1},
		{PID: 10, PPID: 1, Pgrp: 10},
		{PID: 11, PPID: 10, Pgrp: 10},
		{PID: 12, PPID: 11, Pgrp: 12},
		{PID: 20, PPID: 1, Pgrp: 10},
		{PID: 21, PPID: 20, Pgrp: 21},
		{PID: 30, PPID: 1, Pgrp: 30},
		{PID: 40, PPID: 41, Pgrp: 40},
		{PID: 41, PPID: 40, Pgrp: 40},
	}
	for _, c := range []struct {
		name string
		all  []Process
		root int
		want []int
	}{
		{"descendants and process group", all, 10, []int{10, 11, 12, 20, 21}},
		{"a leaf", all, 12, []int{12}},
		{"a group member without descendants in the group", all, 21, []int{21}},
		{"everything below init", all, 1, []int{1, 10, 11, 12, 20, 21, 30}},
		{"a cycle of parent links", all, 40, []int{40, 41}},
		{"a process group whose leader is gone", []Process{{PID: 5, PPID: 1, Pgrp: 4}, {PID: 6, PPID: 5, Pgrp: 4}}, 4, []int{5, 6}},
		{"a root not in the table", all, 99, nil},
		{"an empty table", nil, 10, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			for _, p := range Tree(c.all, c.root) {
				got = append(got, p.PID)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("Tree(%d) = %v, want %v", c.root, got, c.want)
			}
		})
	}
}

// TestLive: zombies and dead processes are not live; every other state is.
func TestLive(t *testing.T) {
	for _, c := range []struct {
		state byte
		want  bool
	}{{'R', true}, {'S', true}, {'D', true}, {'T', true}, {'Z', false}, {'X', false}} {
		if got := (Process{State: c.state}).Live(); got != c.want {
			t.Errorf("Live(%c) = %v, want %v", c.state, got, c.want)
		}
	}
}
