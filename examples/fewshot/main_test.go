package main

import (
	"flag"
	"io"
	"testing"
)

// TestFlags: the defaults validate, lists parse, bad values are refused.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		fs := flag.NewFlagSet("fewshot", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseFlags(fs, args)
	}
	c, err := parse()
	if err != nil || len(c.Shots) != 3 || c.Shots[2] != 5 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if c, err := parse("-shots", "3, 10", "-pretrain", "10"); err != nil || len(c.Shots) != 2 || c.Shots[1] != 10 || c.Steps != 10 {
		t.Errorf("-shots 3,10: %v %v", c.Shots, err)
	}
	for _, bad := range [][]string{{"-shots", "0"}, {"-shots", "x"}, {"-canvas", "16"}, {"-meta-batch", "0"}, {"-digit-max", "80"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
