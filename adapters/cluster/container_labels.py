"""The labels on everything a container cluster creates, and the cleanup they make possible.

No Ryuk reaper runs (its image cannot be pulled everywhere), so the labels are how containers
and networks are found again: by :meth:`~adapters.cluster.containers.ContainerCluster.stop`
(one cluster), by ``bkconform docker down --all`` after a killed process (every cluster), and
by the container DNS probe, whose resources carry the same cluster label.
"""

from __future__ import annotations

from typing import Any

#: Every container and network of a cluster carries this label, valued with the cluster id.
CLUSTER_LABEL = "bkconform.cluster"
#: A node's container carries this label too, valued with the node's name (``zk1``).
NODE_LABEL = "bkconform.node"


def cluster_labels(cluster_id: str, node: str | None = None) -> dict[str, str]:
    """The labels of cluster ``cluster_id``'s network (``node`` None) or of a node's container."""
    labels = {CLUSTER_LABEL: cluster_id}
    if node is not None:
        labels[NODE_LABEL] = node
    return labels


def label_selector(labels: dict[str, str]) -> list[str]:
    """The engine's label filter for ``labels``: ``key=value``, or ``key`` alone (the label is
    present, whatever its value) for an empty value."""
    return [key if not value else f"{key}={value}" for key, value in labels.items()]


def remove_labelled(client: Any, labels: dict[str, str]) -> list[str]:
    """Force-remove every container, then every network, carrying ``labels``; returns errors.

    ``{CLUSTER_LABEL: id}`` removes one cluster; ``{CLUSTER_LABEL: ""}`` is turned into a
    label-presence filter and removes every cluster this project ever started.
    """
    selector = label_selector(labels)
    errors: list[str] = []
    try:
        containers = client.containers.list(all=True, filters={"label": selector})
    except Exception as exc:
        return [f"listing containers: {exc}"]
    for container in containers:
        try:
            container.remove(force=True, v=True)
        except Exception as exc:
            if "No such container" not in str(exc) and "no such container" not in str(exc):
                errors.append(f"removing container {container.name}: {exc}")
    try:
        networks = client.networks.list(filters={"label": selector})
    except Exception as exc:
        return [*errors, f"listing networks: {exc}"]
    for network in networks:
        try:
            network.remove()
        except Exception as exc:
            errors.append(f"removing network {network.name}: {exc}")
    return errors


def labelled_resources(client: Any, labels: dict[str, str]) -> dict[str, list[str]]:
    """Names of the containers and networks carrying ``labels`` (see :func:`remove_labelled`)."""
    selector = label_selector(labels)
    return {
        "containers": [
            c.name for c in client.containers.list(all=True, filters={"label": selector})
        ],
        "networks": [n.name for n in client.networks.list(filters={"label": selector})],
    }


__all__ = [
    "CLUSTER_LABEL",
    "NODE_LABEL",
    "cluster_labels",
    "label_selector",
    "labelled_resources",
    "remove_labelled",
]
