# The image `stoker submit --platform k8s|skypilot|dstack --image` needs: NVIDIA's NGC PyTorch
# (CUDA, NCCL, torch, HPC-X Open MPI, matched to each other), stoker in /opt/stoker (the
# default --stoker-dir), fio for the storage tests and nccl-tests built against the image's
# own NCCL, for comparing with stoker's sweeps (docs/launchers.md "The image").
#
#   docker build -t REGISTRY/stoker:TAG .            # in a stoker checkout
#   docker build --build-arg NGC_TAG=25.01 -t REGISTRY/stoker:TAG .
#   stoker submit --platform k8s --image REGISTRY/stoker:TAG ...
#
# Pinned: the NGC release (NGC_TAG: its torch, CUDA and NCCL), the nccl-tests release tag
# (NCCL_TESTS_VERSION), fio as the base's Ubuntu release ships it. The sm_90 default builds
# nccl-tests for H100/H200; add targets with NVCC_GENCODE.
ARG NGC_TAG=24.12
FROM nvcr.io/nvidia/pytorch:${NGC_TAG}-py3

ARG NCCL_TESTS_VERSION=v2.19.6
ARG NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90"

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends fio iproute2 pciutils \
 && rm -rf /var/lib/apt/lists/*

# nccl-tests from its release tag, against the NCCL and CUDA of the base image, with MPI off
# (stoker starts its own ranks; the binaries are for single-process -g runs beside them)
RUN git clone --depth 1 --branch "${NCCL_TESTS_VERSION}" https://github.com/NVIDIA/nccl-tests.git /opt/nccl-tests \
 && make -C /opt/nccl-tests -j"$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda NVCC_GENCODE="${NVCC_GENCODE}" \
 && /opt/nccl-tests/build/all_reduce_perf --help >/dev/null
ENV PATH=/opt/nccl-tests/build:${PATH}

# EFA (AWS p4d/p5, `--fabric efa`): `--build-arg EFA_INSTALLER_VERSION=1.37.0` adds libfabric with
# its EFA provider (the AWS EFA installer, user space only: the host has the kernel module) and
# the aws-ofi-nccl plugin NCCL loads to use it, built against the image's CUDA; empty (the
# default): neither. The fabric's FI_* and NCCL_* settings come from `stoker submit --fabric efa`.
ARG EFA_INSTALLER_VERSION=""
ARG AWS_OFI_NCCL_VERSION=1.13.0
RUN if [ -n "${EFA_INSTALLER_VERSION}" ]; then \
      apt-get update \
   && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends curl libhwloc-dev autoconf automake libtool \
   && mkdir -p /tmp/efa && cd /tmp/efa \
   && curl -fsSL -o efa.tar.gz "https://efa-installer.amazonaws.com/aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" \
   && tar -xf efa.tar.gz && cd aws-efa-installer \
   && ./efa_installer.sh -y --skip-kmod --skip-limit-conf --no-verify \
   && cd /tmp/efa \
   && curl -fsSL "https://github.com/aws/aws-ofi-nccl/releases/download/v${AWS_OFI_NCCL_VERSION}-aws/aws-ofi-nccl-${AWS_OFI_NCCL_VERSION}.tar.gz" | tar -xz \
   && cd "aws-ofi-nccl-${AWS_OFI_NCCL_VERSION}" \
   && ./configure --prefix=/opt/aws-ofi-nccl --with-libfabric=/opt/amazon/efa --with-cuda=/usr/local/cuda --enable-platform-aws \
   && make -j"$(nproc)" && make install \
   && echo /opt/aws-ofi-nccl/lib > /etc/ld.so.conf.d/aws-ofi-nccl.conf \
   && echo /opt/amazon/efa/lib > /etc/ld.so.conf.d/efa.conf && ldconfig \
   && rm -rf /tmp/efa /var/lib/apt/lists/*; \
    fi

# stoker into the image's own python, beside its torch (never a second torch: no [torch] extra)
COPY . /opt/stoker
RUN python -m pip install --no-cache-dir -e /opt/stoker \
 && python -c "import torch, launchers.cli; print('torch', torch.__version__)" \
 && stoker --version && fio --version

WORKDIR /opt/stoker
CMD ["stoker", "--help"]
