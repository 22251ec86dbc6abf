// The pipeline of every service's Jenkins job, as a step of the shared library
// "paiju-pipeline" (deploy/jenkins/ of this repository, configured once in Jenkins: Manage
// Jenkins > System > Global Pipeline Libraries, name paiju-pipeline, default version main,
// "Allow default version to be overridden" off, library path deploy/jenkins/). A global
// library is always loaded from main, never from the branch or pull request being built, so
// a change cannot rewrite the steps that hold the registry and cluster credentials.
//
// services/<svc>/Jenkinsfile calls paijuService(service: '<svc>'). Each step is a make
// target, so a laptop runs the same commands. Agent (label paiju-build) needs: python3.11,
// make, git and Debian's buildah, podman, skopeo and mmdebstrap (no Docker daemon: buildah
// builds without one; see deploy/README.md, "Images", for a rootless agent); for Promote,
// kubectl. Jenkins provides PAIJU_REGISTRY (registry and path, e.g.
// registry.example.com/paiju), the username/password credential "paiju-registry", the
// kubeconfig file credentials "paiju-kubeconfig-test" and "paiju-kubeconfig-prod", and the
// Lockable Resources plugin (lock "paiju-deploy").
//
//   Changes  make changed-<svc>: the build goes on only when an input of the image or of the
//            pipeline changed since the last successful build (pull requests: since the
//            target branch); otherwise the build ends NOT_BUILT.
//   Build    make build-<svc>: lint, compile, wheel.
//   Test     make test-<svc>: every test file covering what the image ships (deploy/inputs.py
//            tests; table and arbiter include the engines' tests); the JUnit report must exist.
//   Image    make image-<svc>: buildah, on the project's Debian base by digest, packages from
//            the lock files with hashes; the SBOM read from the image (dist/<svc>/).
//   Push     main only: make push-<svc> (skopeo; a tag is never pushed twice), the digest read
//            back from the registry and recorded in dist/<svc>/image.txt.
//   Archive  dist/<svc>/: the digest, the SBOM (CycloneDX), the image id.
//   Promote  main only: make deploy ENV=test with that digest; then the approval, waiting
//            on no agent; then ENV=prod with the same digest (never rebuilt). Every deploy
//            holds the lock "paiju-deploy", so two services never migrate or roll out at once.
//            A rollout that fails its checks is rolled back by make deploy and fails the job.

def call(Map args) {
    String service = args.service
    properties([buildDiscarder(logRotator(numToKeepStr: '30')), disableConcurrentBuilds()])
    boolean promoted = false
    node('paiju-build') {
        timeout(time: 90, unit: 'MINUTES') {
            timestamps {
                checkout scm
                withEnv(["SERVICE=${service}",
                         "PYTEST_ADDOPTS=--junitxml=reports/junit-${service}.xml"]) {
                    promoted = stages(service)
                }
            }
        }
    }
    if (!promoted) {
        return
    }
    // the approval holds no agent and no 90-minute budget: it waits up to a week
    timeout(time: 7, unit: 'DAYS') {
        input message: "Promote paiju-${service} to prod?", ok: 'Deploy to prod'
    }
    node('paiju-build') {
        timeout(time: 60, unit: 'MINUTES') {
            checkout scm
            unarchive mapping: ["dist/${service}/image.txt": "dist/${service}/image.txt"]
            withEnv(["SERVICE=${service}"]) {
                stage('Promote prod') {
                    promote(service, 'prod')
                }
            }
        }
    }
}

// Pushes and deployments happen only for the main branch itself, never for another branch
// or a pull request (CHANGE_ID is set for pull requests).
boolean onMain() {
    return env.BRANCH_NAME == 'main' && !env.CHANGE_ID
}

// true when the digest reached test and waits for the prod approval
boolean stages(String service) {
    boolean changed = true
    stage('Changes') {
        String base = env.CHANGE_ID ? "origin/${env.CHANGE_TARGET}" : (env.GIT_PREVIOUS_SUCCESSFUL_COMMIT ?: '')
        withEnv(["BASE=${base}"]) {
            changed = sh(returnStatus: true, script: 'make "changed-$SERVICE" BASE="$BASE"') == 0
        }
        if (!changed) {
            currentBuild.result = 'NOT_BUILT'
            currentBuild.description = "no input of paiju-${service} changed"
        }
    }
    if (!changed) {
        return false
    }
    stage('Build') {
        sh 'make "build-$SERVICE"'
    }
    stage('Test') {
        try {
            sh 'make "test-$SERVICE"'
        } finally {
            // a missing report fails the build: tests that did not run are not a pass
            junit allowEmptyResults: false, testResults: "reports/junit-${service}.xml"
        }
    }
    stage('Image') {
        if (!env.PAIJU_REGISTRY) {
            error("PAIJU_REGISTRY is not set: the registry of paiju-${service}")
        }
        sh 'make "image-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"'
    }
    if (!onMain()) {
        echo "not the main branch: paiju-${service} is built and tested, not pushed"
        return false
    }
    stage('Push') {
        withCredentials([usernamePassword(credentialsId: 'paiju-registry',
                                          usernameVariable: 'REGISTRY_USER',
                                          passwordVariable: 'REGISTRY_PASSWORD')]) {
            sh '''
                set -eu
                trap 'skopeo logout "${PAIJU_REGISTRY%%/*}" || true' EXIT
                echo "$REGISTRY_PASSWORD" | skopeo login --username "$REGISTRY_USER" --password-stdin "${PAIJU_REGISTRY%%/*}"
                make "push-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"
            '''
        }
    }
    stage('Archive') {
        archiveArtifacts artifacts: "dist/${service}/**", fingerprint: true
    }
    stage('Promote') {
        promote(service, 'test')
    }
    return true
}

// make deploy rolls a failed rollout back by itself (deploy/promote.py: a rollout past its
// progress deadline, a new pod crash looping, or a failed smoke check puts every Deployment
// back on the revision it ran before, inside the lock) and exits non-zero; the release
// directory is archived either way and the job fails naming the failed and the restored
// images (build/release/<env>/rollback.txt). No rollback.txt: it failed before any rollout.
def promote(String service, String environment) {
    int status = 0
    lock('paiju-deploy') {
        withCredentials([file(credentialsId: "paiju-kubeconfig-${environment}", variable: 'KUBECONFIG')]) {
            withEnv(["DEPLOY_ENV=${environment}"]) {
                status = sh(returnStatus: true,
                            script: 'make deploy ENV="$DEPLOY_ENV" IMAGES="$SERVICE=$(cat dist/$SERVICE/image.txt)"')
            }
        }
    }
    archiveArtifacts artifacts: "build/release/${environment}/**", fingerprint: true, allowEmptyArchive: true
    if (status != 0) {
        String report = "build/release/${environment}/rollback.txt"
        String what = fileExists(report) ? readFile(report).trim()
                : "make deploy exited ${status} before the rollout (see the log above); nothing was rolled back"
        currentBuild.description = "paiju-${service}: the ${environment} rollout failed"
        error("paiju-${service} was not deployed to ${environment}. ${what}")
    }
}
