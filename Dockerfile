# wyoming-qwen3: CPU torch by default; pass --build-arg TORCH_INDEX=<a CUDA wheel index> for GPUs.
FROM python:3.11-slim

ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu

WORKDIR /app
RUN pip install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"

COPY pyproject.toml README.md ./
COPY wyoming_qwen3 ./wyoming_qwen3
RUN pip install --no-cache-dir .

VOLUME /data
EXPOSE 10300
ENTRYPOINT ["wyoming-qwen3", "--uri", "tcp://0.0.0.0:10300", "--data-dir", "/data"]
