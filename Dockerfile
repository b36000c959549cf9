# wyoming-qwen3 on the CPU (torch's CPU build). For a CUDA GPU: --build-arg TORCH=torch==2.13.0
# --build-arg TORCH_INDEX=https://pypi.org/simple (PyPI's torch brings its CUDA libraries; the host needs only
# the NVIDIA driver and its container toolkit): see the README.
# Debian 12 (bookworm) pinned: python:3.11-slim moved to Debian 13.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

ARG TORCH=torch==2.13.0+cpu
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HOME=/data/huggingface \
    WYOMING_QWEN3_URI=tcp://0.0.0.0:10300 \
    WYOMING_QWEN3_DATA_DIR=/data

# A user of its own owns /data, where models are downloaded.
RUN useradd --system --uid 1000 --create-home --home-dir /data wyoming

WORKDIR /app
# Dependencies first, from the lock: a change to the code rebuilds only the layers after this one.
COPY requirements.lock pyproject.toml script/install-deps ./
RUN ./install-deps "${TORCH_INDEX}" "${TORCH}"
# The demo model (--model demo), a distribution of its own that changes less often than the code.
COPY demo-model ./demo-model
RUN pip install --no-deps ./demo-model && rm -rf demo-model/build
COPY wyoming_qwen3 ./wyoming_qwen3
RUN pip install --no-deps . && rm -rf build

USER wyoming
VOLUME /data
EXPOSE 10300
HEALTHCHECK --start-period=10m --interval=30s --timeout=10s CMD ["python", "-m", "wyoming_qwen3.server.healthcheck"]
# Options come from WYOMING_QWEN3_* variables (the two above are defaults) or from arguments after the image.
ENTRYPOINT ["wyoming-qwen3"]
