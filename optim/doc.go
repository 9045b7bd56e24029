// Package optim holds torch.optim's optimizers and learning-rate
// schedulers for parameters held as Gorgonia tensors: SGD, Adam and AdamW
// update the parameter tensors in place from their gradients, update for
// update as torch 1.13 does (its single-tensor algorithm, foreach=False,
// the CPU default), in the parameters' dtype, float32 or float64; the
// schedulers set an optimizer's learning rate epoch by epoch as
// torch.optim.lr_scheduler does.
//
// An optimizer is made once over the parameter tensors (a model's
// parameters, in a fixed order) and stepped with the gradients of each
// run, in the same order: nil for a parameter without a gradient (torch's
// p.grad None), which is then skipped. Step only reads the gradients.
// State and LoadState copy the optimizer's state out and in for
// checkpoints, under torch's state_dict names (see State). Optimizer is
// the interface they share; LRSetter the part a scheduler drives. A nil
// *SGD, *Adam or *LRScheduler never panics: Step, SetLR and LoadState
// return an error, LR, State, LastLR and LastEpoch a zero value, and a
// scheduler made on a nil optimizer (also a typed nil) is an error.
//
//	torch                                              optim
//	torch.optim.SGD(params, lr, momentum, dampening,   NewSGD(params, SGDOpts{LR, Momentum, Dampening,
//	    weight_decay, nesterov, maximize=)                  WeightDecay, Nesterov, Maximize})
//	torch.optim.Adam(params, lr, betas, eps,           NewAdam(params, AdamOpts{LR, Beta1, Beta2, Eps,
//	    weight_decay, amsgrad, maximize=)                   WeightDecay, AMSGrad, Maximize}); DefaultAdamOpts
//	torch.optim.AdamW(...)                             NewAdamW(params, AdamOpts{...}); DefaultAdamWOpts
//	optimizer.step() after loss.backward()             opt.Step(grads)
//	optimizer.param_groups[0]["lr"] (read, write)      opt.LR(), opt.SetLR(lr)
//	optimizer.state_dict(), load_state_dict(d)         opt.State(), opt.LoadState(st)
//	state[i]["step"], ["exp_avg"], ["exp_avg_sq"],     State.Params[i].Step, .Buffers[ExpAvg], [ExpAvgSq],
//	    ["max_exp_avg_sq"], ["momentum_buffer"]            [MaxExpAvgSq], [MomentumBuffer]
//	lr_scheduler.StepLR(opt, step_size, gamma)         NewStepLR(opt, stepSize, gamma)
//	lr_scheduler.MultiStepLR(opt, milestones, gamma)   NewMultiStepLR(opt, milestones, gamma)
//	lr_scheduler.LinearLR(opt, start_factor,           NewLinearLR(opt, startFactor, endFactor, totalIters)
//	    end_factor, total_iters)
//	lr_scheduler.CosineAnnealingLR(opt, T_max,         NewCosineAnnealingLR(opt, tMax, etaMin)
//	    eta_min)
//	lr_scheduler.SequentialLR(opt, schedulers,         NewSequentialLR(opt, schedulers, milestones)
//	    milestones)
//	scheduler.step(), get_last_lr()[0], last_epoch     s.Step(), s.LastLR(), s.LastEpoch()
//
// Only one parameter group is supported (one set of hyper-parameters for
// all parameters), dense tensors only (no sparse gradients), and
// schedulers start at epoch 0 (torch's last_epoch=-1).
//
// # Agreement with torch
//
// The tests compare 20 steps of each optimizer configuration (SGD plain,
// with momentum, dampening, Nesterov, weight decay, maximize; Adam, with
// AMSGrad, weight decay, maximize; AdamW, with AMSGrad) over parameters of
// shapes [3, 4], [5] and [], with missing gradients on some steps, and 30
// steps of each scheduler with values written by torch 1.13
// (scripts/gen_optim_golden.py). The updates repeat torch's operations in
// torch's order: the scalars rounded to the parameter's dtype where
// torch rounds them, a + α·b and a + (α·b)·c fused into one rounding as
// torch's AVX2 CPU kernels fuse add(alpha=) and addcmul, the bias
// corrections 1 − β^t correctly rounded as Python's ** is. So the
// parameters and the state after every step equal torch's bit for bit on
// amd64, in float32 and float64; the tests allow 1e-12 (float64) and 1e-6
// (float32) relative. The schedulers use torch's recursive (chainable)
// forms; they agree to 1e-14 (only the cosine's math.Cos differs from
// glibc's cos, in the last bit).
//
// # Gorgonia's solvers
//
// Gorgonia's solvers (gorgonia.org/gorgonia's VanillaSolver, Momentum,
// AdamSolver) are not used: none equals torch's update.
//   - All take []gorgonia.ValueGrad and overwrite the gradient in place
//     (scaled, squared, then zeroed).
//   - VanillaSolver computes w + (−η·g) in two roundings where torch fuses
//     them into one.
//   - Momentum keeps v = μ·v − η·g (the learning rate inside the velocity,
//     so a scheduler's change acts late), starts from v = 0 where torch's
//     first buffer is the gradient, has no dampening nor Nesterov, and
//     applies its L2 penalty to the velocity instead of the weights.
//   - AdamSolver adds eps to √(v·(1/(1 − β2^t))) rather than to
//     √v / √(1 − β2^t), takes the bias corrections from math.Pow and
//     counts steps for the whole model (torch counts per parameter, so
//     that one without a gradient keeps its count); it has no AMSGrad, no
//     decoupled weight decay and no maximize.
//
// Instead the updates here are plain loops over the tensors' backing
// slices, one generic function per algorithm for float32 and float64.
package optim
