// The -photo mode: the demo's first version.

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gops-dev/gops/gops"
)

// Settings of the demo.
const (
	photoPNGName = "roialign_demo.png" // written into the -out folder
	fdStep       = 1e-5                // finite-difference step on each W entry
	fdTol        = 1e-6                // largest relative error the check accepts
)

// cropOpts are the RoIAlign parameters of the demo, for the crops and the
// model alike.
var cropOpts = gops.RoIAlignOpts{OutputSize: [2]int{32, 32}, SamplingRatio: 2, Aligned: true}

// demoModel is the colour-mixing model, a fixed deterministic starting point.
var demoModel = Model{
	W: [9]float64{
		0.9, 0.3, -0.2,
		-0.1, 1.1, 0.2,
		0.25, -0.3, 0.8,
	},
	B:      [3]float64{-0.3, 0.1, -0.2},
	Target: 0.25,
	Opts:   cropOpts,
}

// PhotoResult is what one run of the -photo mode computed.
type PhotoResult struct {
	ImageW, ImageH int
	PNGPath        string
	PNGW, PNGH     int
	Values         PenaltyValues
	FD             FDResult
}

// errCheckFailed is returned by Run when ∂P/∂W disagrees with finite
// differences.
var errCheckFailed = errors.New("finite-difference check of ∂P/∂W failed")

// RunPhoto executes the -photo mode: RoIAlign crops of the embedded photo
// and the second-order gradient penalty. It writes the PNG into outDir
// (created if needed) and prints a report to w. It returns errCheckFailed
// (wrapped) if the finite-difference check fails, with the Result filled in.
func RunPhoto(outDir string, w io.Writer) (*PhotoResult, error) {
	img, err := LoadPhoto()
	if err != nil {
		return nil, err
	}
	x := ImageTensor(img)
	boxes := BoxesTensor(photoBoxes)
	res := &PhotoResult{ImageW: img.Bounds().Dx(), ImageH: img.Bounds().Dy()}

	fmt.Fprintf(w, "gops demo: RoIAlign on a photograph, and a second derivative through it\n\n")
	fmt.Fprintf(w, "photo   %s (embedded), %dx%d, as input x [1, 3, %d, %d] float64 in [0, 1]\n",
		photoName, res.ImageW, res.ImageH, res.ImageH, res.ImageW)
	fmt.Fprintf(w, "boxes   [%d, 5], rows (batch, x1, y1, x2, y2) in pixels:\n", len(photoBoxes))
	for i, b := range photoBoxes {
		fmt.Fprintf(w, "          %-10s (0, %3g, %3g, %3g, %3g)  %s\n", b.Name, b.X1, b.Y1, b.X2, b.Y2, colourName(i))
	}

	// 1. Crops.
	crops, err := Crops(x, boxes, cropOpts)
	if err != nil {
		return nil, fmt.Errorf("crops: %w", err)
	}
	fmt.Fprintf(w, "\n1. Crops: y = RoIAlign(x, boxes), output %dx%d, sampling ratio %d, aligned = %t -> %v\n",
		cropOpts.OutputSize[0], cropOpts.OutputSize[1], cropOpts.SamplingRatio, cropOpts.Aligned, crops.Shape())

	// 2. Second order.
	md := demoModel
	pen, err := NewPenalty(&md, x, boxes)
	if err != nil {
		return nil, fmt.Errorf("penalty graph: %w", err)
	}
	defer pen.Close()
	v, err := pen.Eval(md.W)
	if err != nil {
		return nil, err
	}
	res.Values = v
	fmt.Fprintf(w, "\n2. Second order through RoIAlign (TapeMachine, gops.Grad twice):\n")
	fmt.Fprintf(w, "   z = W·x + b   per-pixel 3x3 colour mixing, W and b learnable\n")
	fmt.Fprintf(w, "   y = RoIAlign(tanh(z), boxes)\n")
	fmt.Fprintf(w, "   L = (1/K) Σ_k ||y_k - %g||²      = %.12g\n", md.Target, v.Loss)
	fmt.Fprintf(w, "   P = ||∂L/∂x||²  (gradient penalty) = %.12g\n", v.P)
	fmt.Fprintf(w, "   W =\n")
	printMatrix(w, md.W, "%10.4f")

	fd, err := FiniteDifferences(pen, md.W, fdStep)
	res.FD = fd
	if err != nil {
		return res, fmt.Errorf("finite differences: %w", err)
	}
	fmt.Fprintf(w, "   ∂P/∂W (gops.Grad of P, itself built from gops.Grad of L) =\n")
	printMatrix(w, fd.Analytic, "%18.10e")
	fmt.Fprintf(w, "   central differences (P(W ± %g·e_ij) through the same graph) =\n", fd.Step)
	printMatrix(w, fd.Numeric, "%18.10e")
	fmt.Fprintf(w, "   relative error |analytic - numeric| / max(|analytic|, |numeric|) =\n")
	printMatrix(w, fd.RelErr, "%18.2e")
	status := "OK"
	if !(fd.MaxRelErr < fdTol) {
		status = "FAILED"
	}
	fmt.Fprintf(w, "   max relative error %.2e (tolerance %g): %s\n", fd.MaxRelErr, fdTol, status)

	// 3. The picture.
	grid, err := RenderGrid(img, photoBoxes, crops, v.GradMag)
	if err != nil {
		return res, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return res, err
	}
	res.PNGPath = filepath.Join(outDir, photoPNGName)
	if err := WritePNG(res.PNGPath, grid); err != nil {
		return res, err
	}
	res.PNGW, res.PNGH = grid.Bounds().Dx(), grid.Bounds().Dy()
	fmt.Fprintf(w, "\n3. Wrote %s (%dx%d): top left the photo with the boxes, top right |∂L/∂x|\n",
		res.PNGPath, res.PNGW, res.PNGH)
	fmt.Fprintf(w, "   (summed over channels, square-root scale), below the %d crops scaled x%d, framed in their box colours\n",
		len(photoBoxes), cropScale)

	if status != "OK" {
		return res, fmt.Errorf("%w: max relative error %.2e, tolerance %g", errCheckFailed, fd.MaxRelErr, fdTol)
	}
	return res, nil
}

// printMatrix prints a row-major 3x3 matrix, indented, one row a line.
func printMatrix(w io.Writer, m [9]float64, format string) {
	for r := 0; r < 3; r++ {
		fmt.Fprint(w, "     [")
		for c := 0; c < 3; c++ {
			fmt.Fprintf(w, " "+format, m[3*r+c])
		}
		fmt.Fprintln(w, " ]")
	}
}
