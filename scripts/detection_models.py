"""Small torchvision detection models for package detection's golden files,
built from torchvision 0.14's own classes, shared by the
scripts/gen_detection_*.py generators.

Not run on its own. A generator in scripts/ imports it after setting
sys.dont_write_bytecode (no __pycache__ in scripts/):

    sys.dont_write_bytecode = True
    import detection_models as dm  # noqa: E402

What it gives:

- TinyResNet: torchvision.models.resnet.ResNet with a chosen stem width
  and per-stage planes (1 to 4 stages), its layers made by ResNet's own
  _make_layer and BasicBlock / Bottleneck, initialised as ResNet.__init__.
- resnet_fpn: a BackboneWithFPN over any ResNet through torchvision's
  _resnet_fpn_extractor (its requires_grad_ freezing and return_layers),
  its FPN rebuilt when out_channels is not 256 or the stage widths do not
  double (the extractor assumes both).
- randomize_norms: random weight, bias, running_mean and running_var of
  every FrozenBatchNorm2d / BatchNorm2d, so that they matter in a golden.
- formula_fill: every state_dict tensor from a formula that a Go test can
  compute too (formula_value), for cases whose weights are not stored.
- state_dict_lists, requires_grad_keys: a model's tensors as lists, and
  which keys are trainable.

Only torch and torchvision are used.
"""

import functools
import math

import torch
from torch import nn
from torchvision.models import resnet
from torchvision.models.detection.backbone_utils import BackboneWithFPN, _resnet_fpn_extractor
from torchvision.ops import misc as misc_nn_ops
from torchvision.ops.feature_pyramid_network import FeaturePyramidNetwork, LastLevelMaxPool, LastLevelP6P7

BLOCKS = {"BasicBlock": resnet.BasicBlock, "Bottleneck": resnet.Bottleneck}


def frozen_bn(eps=1e-5):
    """torchvision.ops.misc.FrozenBatchNorm2d with the given eps, as a
    norm_layer (torchvision's COCO_V1 RetinaNet / Faster R-CNN builders
    pass eps=0.0)."""
    return functools.partial(misc_nn_ops.FrozenBatchNorm2d, eps=eps)


class TinyResNet(resnet.ResNet):
    """torchvision's ResNet with stem width stem_width and len(planes)
    stages (layer1.. of planes[i] planes, layers[i] blocks, stride 1 then
    2), made by ResNet._make_layer; no avgpool or fc (a backbone).
    Initialised as ResNet.__init__: convs kaiming_normal_(fan_out, relu),
    BatchNorm2d weight 1 bias 0 (FrozenBatchNorm2d starts at 1, 0, 0, 1)."""

    def __init__(self, block, layers, planes, stem_width=64, groups=1, width_per_group=64, norm_layer=None):
        nn.Module.__init__(self)
        if isinstance(block, str):
            block = BLOCKS[block]
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if not 1 <= len(layers) == len(planes) <= 4:
            raise ValueError(f"layers {layers} and planes {planes}: 1 to 4 stages of each")
        self._norm_layer = norm_layer
        self.inplanes = stem_width
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, stem_width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(stem_width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for i, (p, n) in enumerate(zip(planes, layers)):
            setattr(self, f"layer{i + 1}", self._make_layer(block, p, n, stride=1 if i == 0 else 2))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)


def stage_channels(model):
    """The output channels of each stage layer1.. of a ResNet."""
    out = []
    for i in range(1, 5):
        layer = getattr(model, f"layer{i}", None)
        if layer is None:
            break
        last = layer[-1]
        out.append((last.bn3 if hasattr(last, "bn3") else last.bn2).weight.shape[0])
    return out


def resnet_fpn(body, trainable_layers, returned_layers=None, extra_blocks=None, out_channels=256):
    """A BackboneWithFPN over the ResNet body, through torchvision's
    _resnet_fpn_extractor (the freezing of trainable_layers and the
    return_layers are its own). extra_blocks: None (LastLevelMaxPool),
    ("maxpool",) or ("p6p7", in_channels) (LastLevelP6P7(in_channels,
    out_channels)). The FPN is rebuilt (FeaturePyramidNetwork, as
    BackboneWithFPN builds it) when out_channels is not 256 or the
    extractor's in_channels_list (stage 2's width halved, doubling) is not
    the real stage widths."""

    def extra():
        if extra_blocks is None or extra_blocks[0] == "maxpool":
            return LastLevelMaxPool()
        return LastLevelP6P7(extra_blocks[1], out_channels)

    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    widths = stage_channels(body)
    in_channels_list = [widths[i - 1] for i in returned_layers]
    m = _resnet_fpn_extractor(body, trainable_layers, returned_layers, extra())
    if out_channels != 256 or [b[0].in_channels for b in m.fpn.inner_blocks] != in_channels_list:
        m.fpn = FeaturePyramidNetwork(in_channels_list, out_channels, extra_blocks=extra())
        m.out_channels = out_channels
    assert isinstance(m, BackboneWithFPN)
    return m


def randomize_norms(model, gen):
    """Random weight ~ U(0.5, 1.5), bias ~ N(0, 0.2²), running_mean ~
    N(0, 0.2²) and running_var ~ U(0.5, 2) in every FrozenBatchNorm2d and
    BatchNorm2d of model, from the torch.Generator gen."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (misc_nn_ops.FrozenBatchNorm2d, nn.BatchNorm2d)):
                c = m.weight.shape[0]
                m.weight.copy_(0.5 + torch.rand(c, generator=gen, dtype=torch.float64))
                m.bias.copy_(0.2 * torch.randn(c, generator=gen, dtype=torch.float64))
                m.running_mean.copy_(0.2 * torch.randn(c, generator=gen, dtype=torch.float64))
                m.running_var.copy_(0.5 + 1.5 * torch.rand(c, generator=gen, dtype=torch.float64))


def formula_value(key, k, i, shape):
    """Element i (row-major) of the k-th tensor (in sorted key order) of a
    formula-filled model, by the tensor's key and shape: s = sin(0.37·i +
    k);
      running_var: 1 + 0.5·s²;    running_mean, bias: 0.1·s;
      a norm's weight (rank 1): 1 + 0.2·s;
      a conv weight (rank 4): 2·s/√fan_in (Kaiming's variance for relu).
    The Go tests compute the same (detection/backbone_test.go)."""
    s = math.sin(0.37 * i + k)
    if key.endswith("running_var"):
        return 1 + 0.5 * s * s
    if key.endswith("running_mean") or key.endswith("bias"):
        return 0.1 * s
    if len(shape) == 1:
        return 1 + 0.2 * s
    fan_in = 1
    for d in shape[1:]:
        fan_in *= d
    return 2 * s / math.sqrt(fan_in)


def formula_fill(model):
    """Fills every state_dict tensor of model (num_batches_tracked
    excepted) with formula_value, keys in sorted order."""
    sd = model.state_dict()
    keys = sorted(k for k in sd if not k.endswith("num_batches_tracked"))
    with torch.no_grad():
        for k, key in enumerate(keys):
            t = sd[key]
            vals = [formula_value(key, k, i, list(t.shape)) for i in range(t.numel())]
            t.copy_(torch.tensor(vals, dtype=torch.float64).reshape(t.shape))


def state_dict_lists(model):
    """{key: {"shape": [...], "data": [float, ...]}} of model's state_dict
    without num_batches_tracked (values as float64)."""
    out = {}
    for key, t in model.state_dict().items():
        if key.endswith("num_batches_tracked"):
            continue
        out[key] = {"shape": list(t.shape), "data": t.detach().double().reshape(-1).tolist()}
    return out


def requires_grad_keys(model):
    """The sorted names of model's parameters with requires_grad set."""
    return sorted(n for n, p in model.named_parameters() if p.requires_grad)
