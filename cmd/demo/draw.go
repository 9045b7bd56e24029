package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
)

// boxColours gives each box its colour (in the order of the boxes; reused
// cyclically), the same on the canvas and the crop frames.
var boxColours = []color.RGBA{
	{230, 25, 75, 255},   // red
	{255, 225, 25, 255},  // yellow
	{60, 220, 75, 255},   // green
	{240, 50, 230, 255},  // magenta
	{245, 130, 48, 255},  // orange
	{70, 240, 240, 255},  // cyan
	{255, 255, 255, 255}, // white
}

// byte8 maps v in [0, 1] (clamped) to 0..255.
func byte8(v float64) uint8 {
	return uint8(math.Round(255 * math.Min(1, math.Max(0, v))))
}

// WritePNG encodes img as a PNG file at path.
func WritePNG(path string, img image.Image) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return f.Close()
}
