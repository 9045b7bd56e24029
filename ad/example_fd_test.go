package ad_test

import (
	"math"
	"testing"

	"github.com/gops-dev/gops/ad"
	"gorgonia.org/gorgonia"
)

// metaObjective is F(θ) = L_q(θ − α∇L_s(θ)) of ExampleGrad's task,
// computed with first-order graphs only: the inner gradient is evaluated,
// the step taken on the host, and the query loss evaluated at θ'.
func metaObjective(t *testing.T, a0 float64, w0 []float64) float64 {
	t.Helper()
	tk := newTask(a0, w0)
	inner, err := ad.Grad(tk.loss(tk.a, tk.w, tk.support, tk.st), tk.a, tk.w)
	if err != nil {
		t.Fatal(err)
	}
	var ga, gw gorgonia.Value
	gorgonia.Read(inner[0], &ga)
	gorgonia.Read(inner[1], &gw)
	m, err := ad.NewTapeMachine(tk.x.Graph())
	if err != nil {
		panic(err)
	}
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	w2 := make([]float64, len(w0))
	for i := range w2 {
		w2[i] = w0[i] - alpha*gw.Data().([]float64)[i]
	}
	q := newTask(a0-alpha*ga.Data().(float64), w2)
	var lv gorgonia.Value
	gorgonia.Read(q.loss(q.a, q.w, q.query, q.qt), &lv)
	m, err = ad.NewTapeMachine(q.x.Graph())
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	return lv.Data().(float64)
}

// ExampleGrad's meta-gradient, a second derivative through RoIAlign,
// agrees with central differences of the meta-objective.
func TestExampleGradFiniteDifferences(t *testing.T) {
	a0, w0 := 0.05, []float64{0.5, -0.25, 0.25, 1}
	da, dw, err := metaGradient(a0, w0)
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	check := func(what string, got, plus, minus float64) {
		num := (plus - minus) / (2 * h)
		if math.Abs(got-num) > 1e-6*math.Max(1, math.Abs(num)) {
			t.Errorf("%s: ad.Grad %.10g, central difference %.10g", what, got, num)
		}
	}
	check("a", da, metaObjective(t, a0+h, w0), metaObjective(t, a0-h, w0))
	for i := range w0 {
		wp, wm := append([]float64(nil), w0...), append([]float64(nil), w0...)
		wp[i] += h
		wm[i] -= h
		check("w", dw[i], metaObjective(t, a0, wp), metaObjective(t, a0, wm))
	}
}
