"""Minari: record agentgym episodes with Minari's ``DataCollector`` and load them back.

The spaces' serialisers (:func:`register_serializers`) are registered with Minari by
:mod:`agentgym.space_utils` as soon as ``minari.serialization`` is imported, so
``minari.load_dataset`` rebuilds the spaces in any process that imported agentgym. Recording
needs one more step: Minari appends each observation leaf to a per-episode list with ``jax.tree_util`` and then writes
columns, so a tuple of 0..16 images of varying size (a pytree node whose shape changes
from step to step) cannot go in as it is. :func:`data_collector` therefore packs each
step's images into one ``bytes`` value (:func:`agentgym.spaces.encode_images`: shapes,
then raw pixels; lossless, no JPEG) under a :class:`PackedImages` space, and stores with
Minari's ``arrow`` format, which keeps binary values exactly (``hdf5`` would strip
trailing zero bytes). :func:`episode_observations` turns a loaded episode back into the
env's own ``{"text": str, "images": tuple}`` observations.

Infos (``record_infos=True``): Minari stacks every info leaf of an episode, reset included,
so each info must have the same keys and types; agentgym's reset and step infos differ
(``tools`` at reset, ``tool_calls`` per step, ``error`` None or text). The callback records
:func:`minari_info` instead: the same few fixed fields every step, plus the whole info as
JSON, so nothing is lost.

A plain ``minari.DataCollector(gym.make(id))`` cannot record these observations (it fails
when the first episode is written), so it is refused when it is built, with a message that
names :func:`data_collector` (:func:`plain_collector_error`).

Example::

    import gymnasium as gym, minari
    from agentgym.integrations.minari import data_collector, episode_observations

    env = data_collector(gym.make("agentgym/VisualClock-v0"))
    env.reset(seed=0); env.step("<answer>3:15</answer>")
    data = env.create_dataset("agentgym/visualclock/demo-v0", algorithm_name="scripted")
    observations = episode_observations(next(data.iterate_episodes()))
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from gymnasium import spaces
from gymnasium.spaces import Space

from agentgym.error import DependencyMissingError
from agentgym.spaces import RGBImages, UnicodeText, decode_images, encode_images
from agentgym.text import safe_text

__all__ = [
    "PackedImages",
    "data_collector",
    "episode_observations",
    "minari_info",
    "pack_observation",
    "packed_observation_space",
    "plain_collector_error",
    "register_serializers",
    "unpack_observation",
]


class PackedImages(Space[bytes]):
    """An :class:`RGBImages` value packed into ``bytes`` by ``encode_images``."""

    def __init__(self, images: RGBImages, *, seed: int | None = None) -> None:
        self.images = images
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> bytes:
        return encode_images(self.images.sample())

    def contains(self, x: Any) -> bool:
        if not isinstance(x, bytes):
            return False
        try:
            return self.images.contains(decode_images(x))
        except ValueError:
            return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackedImages) and other.images == self.images

    def __repr__(self) -> str:
        return f"PackedImages({self.images!r})"


def serialize_packed(space: PackedImages, to_string: bool = True) -> Any:
    """Minari's serialised form of a :class:`PackedImages` space."""
    out = {
        "type": "AgentGymPackedImages",
        "max_images": space.images.max_images,
        "max_height": space.images.max_height,
        "max_width": space.images.max_width,
    }
    return json.dumps(out) if to_string else out


def _serialize_text(space: UnicodeText, to_string: bool = True) -> Any:
    out = {"type": "AgentGymUnicodeText", "max_length": space.max_length}
    return json.dumps(out) if to_string else out


def _serialize_images(space: RGBImages, to_string: bool = True) -> Any:
    # Only a plain minari.DataCollector(env) serialises RGBImages itself, and it cannot record
    # them (it fails when the first episode is written): refuse it now, naming the helper
    # that can. data_collector stores PackedImages instead.
    raise plain_collector_error(space)


def _images_space(d: Mapping[str, Any]) -> RGBImages:
    return RGBImages(int(d["max_images"]), int(d["max_height"]), int(d["max_width"]))


def register_serializers(module: ModuleType) -> None:
    """Register the agentgym spaces with ``minari.serialization`` (``module``): Minari's
    dispatchers ``serialize_space`` (on the type) and ``deserialize_space`` (on a "type"
    string)."""
    module.serialize_space.register(UnicodeText)(_serialize_text)
    module.serialize_space.register(RGBImages)(_serialize_images)
    module.serialize_space.register(PackedImages)(serialize_packed)
    module.deserialize_space.register("AgentGymUnicodeText")(
        lambda d: UnicodeText(int(d["max_length"]))
    )
    module.deserialize_space.register("AgentGymRGBImages")(_images_space)
    module.deserialize_space.register("AgentGymPackedImages")(
        lambda d: PackedImages(_images_space(d))
    )


def packed_observation_space(space: spaces.Dict) -> spaces.Dict:
    """The env's observation space with ``images`` as :class:`PackedImages`."""
    images = space["images"]
    if not isinstance(images, RGBImages):
        raise TypeError(f"expected an agentgym observation space, got images space {images!r}")
    return spaces.Dict({"text": space["text"], "images": PackedImages(images)})


def pack_observation(obs: dict[str, Any]) -> dict[str, Any]:
    """``{"text", "images"}`` with the images packed into one ``bytes`` value.

    Lone surrogates in the text become U+FFFD: Arrow strings are strict UTF-8.
    """
    return {"text": safe_text(obs["text"]), "images": encode_images(tuple(obs["images"]))}


def plain_collector_error(space: Any) -> TypeError:
    """Why ``minari.DataCollector`` cannot take an agentgym env as it is, and what to use."""
    return TypeError(
        f"minari.DataCollector cannot record agentgym observations as they are ({space!r}: a "
        "tuple of 0..16 images of varying size, which Minari's buffers and storages cannot "
        "stack). Use agentgym.integrations.minari.data_collector(env, ...) instead: it is "
        "Minari's DataCollector with the images packed losslessly into bytes and infos of "
        "one fixed shape (docs/integrations/minari.md)."
    )


def minari_info(info: Mapping[str, Any], reward_names: Any) -> dict[str, Any]:
    """An env's reset or step info in the one shape Minari can stack across an episode.

    ``state_key`` (str), ``action_valid`` (bool; True at reset), ``error`` (str; "" for
    none), ``success`` (bool; False until the env says so), ``reward_components`` (one float
    per name in ``reward_names``, the env's reward weights; 0.0 at reset) and ``json``: the
    whole info as JSON text (anything JSON cannot hold as its ``str``), so nothing is lost.
    """
    components = info.get("reward_components") or {}
    error = info.get("error")
    return {
        "state_key": str(info.get("state_key", "")),
        "action_valid": bool(info.get("action_valid", True)),
        "error": "" if error is None else safe_text(str(error)),
        "success": bool(info.get("success", False)),
        "reward_components": {
            str(name): float(components.get(name, 0.0)) for name in sorted(reward_names)
        },
        "json": json.dumps(dict(info), default=str, sort_keys=True),
    }


def unpack_observation(obs: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`pack_observation`."""
    return {"text": obs["text"], "images": decode_images(obs["images"])}


def _step_data_callback() -> type:
    try:
        from minari.data_collector.callbacks import StepDataCallback
    except ImportError as exc:
        raise DependencyMissingError("minari", "pip install 'minari[create]'") from exc

    class PackImagesStepData(StepDataCallback):  # type: ignore[misc]
        """Minari's step data with the observation's images packed into bytes."""

        def __call__(self, env: Any, obs: Any, info: Any, **kwargs: Any) -> Any:
            step_data = super().__call__(env, obs=obs, info=info, **kwargs)
            step_data["observation"] = pack_observation(obs)
            if isinstance(step_data.get("action"), str):  # Arrow strings are strict UTF-8
                step_data["action"] = safe_text(step_data["action"])
            weights = getattr(env.unwrapped, "reward_weights", None) or {}
            step_data["info"] = minari_info(info, weights)
            return step_data

    return PackImagesStepData


def data_collector(env: Any, **kwargs: Any) -> Any:
    """Minari's ``DataCollector`` around ``env``, set up to record agentgym observations.

    Extra keyword arguments go to ``DataCollector`` (``record_infos=True`` records
    :func:`minari_info` per step); ``data_format`` must stay ``"arrow"``.
    """
    from minari import DataCollector

    data_format = kwargs.pop("data_format", "arrow")
    if data_format != "arrow":
        raise ValueError(
            f"data_format must be 'arrow' for agentgym envs, got {data_format!r}: "
            "hdf5 stores bytes as fixed-length strings and drops trailing zero bytes of images"
        )
    return DataCollector(
        env,
        step_data_callback=_step_data_callback(),
        observation_space=packed_observation_space(env.observation_space),
        data_format="arrow",
        **kwargs,
    )


def episode_observations(episode: Any) -> list[dict[str, Any]]:
    """A loaded Minari ``EpisodeData``'s observations as the env returned them."""
    obs = episode.observations
    texts, packed = list(obs["text"]), list(obs["images"])
    if len(texts) != len(packed):
        raise ValueError(
            f"episode {episode.id} has {len(texts)} texts but {len(packed)} image entries; "
            "was it recorded with agentgym.integrations.minari.data_collector?"
        )
    return [
        {"text": str(t), "images": decode_images(bytes(p))}
        for t, p in zip(texts, packed, strict=True)
    ]
