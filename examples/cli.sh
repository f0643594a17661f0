#!/usr/bin/env bash
# The command line, as a LIBLINEAR user types it (svmopt-train / svmopt-predict come with
# `pip install -e .`). Data: $SVMOPT_DATA or ../shared/data beside the repository.
#   bash examples/cli.sh [work folder]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
data="${SVMOPT_DATA:-$here/../../shared/data}"
work="${1:-$(mktemp -d)}"
cd "$work"

# LIBLINEAR's -s 3 (L1-loss SVM, dual coordinate descent) with a bias feature, 5-fold CV
svmopt-train -s 3 -B 1 -v 5 "$data/heart_scale.xz"
# train, written in LIBLINEAR's model format (LIBLINEAR's predict reads it), then predict
svmopt-train -s 3 -B 1 --model-format liblinear "$data/a1a.xz" a1a.model
svmopt-predict "$data/a9a.t.xz" a1a.model a9a.predictions
# svmopt's own choices: the Lp hinge (p = 1.5) with ALM, progress every 50 iterations
svmopt-train --loss 1.5 --method alm --progress 50 "$data/heart_scale.xz" heart.model
svmopt-predict -q "$data/heart_scale.xz" heart.model heart.predictions
# the best C by cross validation on warm-started paths (LIBLINEAR's -C), from C = 1/4
svmopt-train -C -c 0.25 -s 1 -B 1 "$data/heart_scale.xz"
